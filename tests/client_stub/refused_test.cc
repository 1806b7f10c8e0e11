// tests/client_stub/refused_test.cc - what the stub runtime does not forward is refused by name.
//
// Loads the stub libcudart.so.13 as a program would (no server: none of these calls needs
// one) and calls entry points of cudart_refused.def, and the host-side constructor
// cudaCreateChannelDesc, which is answered in process.
#include <dlfcn.h>
#include <driver_types.h>
#include <gtest/gtest.h>

namespace {

class Refused : public ::testing::Test {
 protected:
  static void* Lib() {
    static void* lib = dlopen(REMORA_STUB_CUDART, RTLD_NOW | RTLD_LOCAL);
    return lib;
  }
  template <class Fn>
  Fn Sym(const char* name) {
    EXPECT_NE(Lib(), nullptr) << dlerror();
    void* p = Lib() ? dlsym(Lib(), name) : nullptr;
    EXPECT_NE(p, nullptr) << name;
    return reinterpret_cast<Fn>(p);
  }
};

TEST_F(Refused, ARefusedCallIsNotSupportedAndBecomesTheLastError) {
  auto refused = Sym<cudaError_t (*)(void**, unsigned)>("cudaGraphAddExternalSemaphoresSignalNode");
  auto last = Sym<cudaError_t (*)()>("cudaGetLastError");
  ASSERT_TRUE(refused && last);
  void* node = nullptr;
  testing::internal::CaptureStderr();
  EXPECT_EQ(refused(&node, 0), cudaErrorNotSupported);
  EXPECT_EQ(refused(&node, 0), cudaErrorNotSupported);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("cudaGraphAddExternalSemaphoresSignalNode"), std::string::npos) << said;
  EXPECT_EQ(said.find("cudaGraphAddExternalSemaphoresSignalNode",
                      said.find("cudaGraphAddExternalSemaphoresSignalNode") + 1),
            std::string::npos)
      << "said once per entry point: " << said;
  EXPECT_EQ(last(), cudaErrorNotSupported);
  EXPECT_EQ(last(), cudaSuccess);
}

TEST_F(Refused, MipmapsAndPoolExportAreRefusedToo) {
  for (const char* name : {"cudaGetMipmappedArrayLevel", "cudaMallocMipmappedArray",
                           "cudaMemPoolExportToShareableHandle", "cudaImportExternalMemory"}) {
    auto fn = Sym<cudaError_t (*)()>(name);
    ASSERT_TRUE(fn) << name;
    testing::internal::CaptureStderr();
    EXPECT_EQ(fn(), cudaErrorNotSupported) << name;
    (void)testing::internal::GetCapturedStderr();
  }
}

TEST_F(Refused, ChannelDescriptorsAreMadeInProcess) {
  auto make = Sym<cudaChannelFormatDesc (*)(int, int, int, int, cudaChannelFormatKind)>(
      "cudaCreateChannelDesc");
  ASSERT_TRUE(make);
  const cudaChannelFormatDesc d = make(32, 8, 0, 0, cudaChannelFormatKindFloat);
  EXPECT_EQ(d.x, 32);
  EXPECT_EQ(d.y, 8);
  EXPECT_EQ(d.z, 0);
  EXPECT_EQ(d.w, 0);
  EXPECT_EQ(d.f, cudaChannelFormatKindFloat);
}

}  // namespace
