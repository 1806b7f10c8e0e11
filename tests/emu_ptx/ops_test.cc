// tests/emu_ptx/ops_test.cc - one row per instruction: tiny hand-written PTX, inputs -> outputs.
#include "tests/emu_ptx/harness.h"
