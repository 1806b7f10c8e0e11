// tests/cuda/kernels/managed_variables.cu - __managed__ variables: the host reads their
// initializers and writes them before any other CUDA call, kernels update them, and the host
// sees the kernels' writes after a synchronization; a variable spanning pages, one sharing a
// page with others, and a struct. Checked against a CPU reference on random data.
#include <cmath>
#include <vector>

#include "common.h"

struct Pair {
  int count;
  float scale;
};

__managed__ int counter = 5;
__managed__ double table[3000];
__managed__ Pair pair = {1, 2.5f};

__global__ void Count(int times) {
  for (int i = 0; i < times; ++i) atomicAdd(&counter, 1);
}

__global__ void Square(int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    table[i] = table[i] * table[i] * pair.scale;
  if (blockIdx.x == 0 && threadIdx.x == 0) pair.count += 1;
}

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 5)));
  int failures = 0;
  // The first touches come before any CUDA call: the initializers are the device's.
  if (counter != 5 || pair.count != 1 || pair.scale != 2.5f) {
    std::printf("initial values: counter %d, pair {%d, %g}\n", counter, pair.count, pair.scale);
    ++failures;
  }
  counter += 10;
  std::vector<double> want(3000);
  for (int i = 0; i < 3000; ++i) {
    table[i] = rng.Uniform(-4, 4);
    want[i] = table[i] * table[i] * 2.5;
  }
  cudaPointerAttributes a{};
  CHECK(cudaPointerGetAttributes(&a, &table[100]));
  REQUIRE(a.type == cudaMemoryTypeManaged);

  Count<<<4, 64>>>(3);
  Square<<<8, 128>>>(3000);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  if (counter != 15 + 4 * 64 * 3) {
    std::printf("counter %d, expected %d\n", counter, 15 + 4 * 64 * 3);
    ++failures;
  }
  for (int i = 0; i < 3000; ++i)
    if (std::fabs(table[i] - want[i]) > 1e-12 * std::fabs(want[i]) && failures++ < 10)
      std::printf("table[%d] = %g, expected %g\n", i, table[i], want[i]);
  if (pair.count != 2) {
    std::printf("pair.count %d, expected 2\n", pair.count);
    ++failures;
  }

  // The host changes a few elements and the scale; the next kernel sees them.
  pair.scale = -1.0f;
  table[0] = 3.0;
  table[2999] = -0.5;
  Square<<<8, 128>>>(3000);
  CHECK(cudaDeviceSynchronize());
  if (table[0] != -9.0 || table[2999] != -0.25 || pair.count != 3) {
    std::printf("second pass: table[0] %g, table[2999] %g, pair.count %d\n", table[0], table[2999],
                pair.count);
    ++failures;
  }
  for (int i = 1; i < 2999; ++i) {
    const double again = -(want[i] * want[i]);
    if (std::fabs(table[i] - again) > 1e-12 * std::fabs(again) && failures++ < 10)
      std::printf("second pass table[%d] = %g, expected %g\n", i, table[i], again);
  }
  // The runtime's symbol calls take a managed variable as any other.
  int via_symbol = 0;
  CHECK(cudaMemcpyFromSymbol(&via_symbol, counter, sizeof via_symbol));
  const int set_to = 4242;
  CHECK(cudaMemcpyToSymbol(counter, &set_to, sizeof set_to));
  CHECK(cudaDeviceSynchronize());
  void* address = nullptr;
  size_t size = 0;
  CHECK(cudaGetSymbolAddress(&address, table));
  CHECK(cudaGetSymbolSize(&size, table));
  if (via_symbol != 15 + 4 * 64 * 3 || counter != set_to || address != &table[0] ||
      size != sizeof table) {
    std::printf("symbol calls: read %d, counter %d, address %p (table %p), size %zu\n", via_symbol,
                counter, address, static_cast<void*>(&table[0]), size);
    ++failures;
  }
  return Finish(failures, "__managed__ variables");
}
