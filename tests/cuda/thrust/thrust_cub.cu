// tests/cuda/thrust/thrust_cub.cu - Thrust algorithms and CUB device-wide primitives, as a user
// calls them, each checked against the same computation on the host on random data.
//
// Thrust: sort, sort_by_key, reduce (32- and 64-bit integers, double), inclusive/exclusive scan,
// transform on device_vectors.
// CUB: DeviceRadixSort::SortKeys/SortPairs, DeviceReduce::Sum/Max, DeviceScan::InclusiveSum/
// ExclusiveSum, DeviceHistogram::HistogramEven, DeviceSelect::If/Flagged/Unique.
// Flags: -n <elements> (default 65536), -seed <seed>.
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <cub/cub.cuh>

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "../kernels/common.h"

namespace {

int g_failures = 0;

// Records one named check; prints the first mismatches of each.
void Expect(bool ok, const char* what) {
  if (ok) return;
  std::printf("mismatch: %s\n", what);
  ++g_failures;
}

template <typename T>
bool Same(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

template <typename T>
std::vector<T> ToHost(const thrust::device_vector<T>& d) {
  std::vector<T> h(d.size());
  thrust::copy(d.begin(), d.end(), h.begin());
  return h;
}

// A device buffer of n elements, freed at scope exit.
template <typename T>
struct DeviceBuf {
  T* p = nullptr;
  size_t n = 0;
  explicit DeviceBuf(size_t count) : n(count) {
    CHECK(cudaMalloc(&p, std::max<size_t>(count * sizeof(T), 1)));
  }
  explicit DeviceBuf(const std::vector<T>& h) : DeviceBuf(h.size()) {
    CHECK(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceBuf() { cudaFree(p); }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
  std::vector<T> Get(size_t count) const {
    std::vector<T> h(count);
    CHECK(cudaMemcpy(h.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  std::vector<T> Get() const { return Get(n); }
};

// Runs a CUB call twice, as CUB's contract asks: once to size its temporary storage, once to work.
template <typename Call>
void CubRun(Call call) {
  size_t bytes = 0;
  CHECK(call(nullptr, bytes));
  DeviceBuf<unsigned char> temp(bytes);
  CHECK(call(temp.p, bytes));
  CHECK(cudaDeviceSynchronize());
}

std::vector<int> RandomInts(Rng& rng, int n, int lo, int hi) {
  std::vector<int> v(n);
  for (int& x : v) x = rng.Int(lo, hi);
  return v;
}

struct Saxpy {
  float a;
  __host__ __device__ float operator()(float x, float y) const { return a * x + y; }
};

struct Affine {
  __host__ __device__ int operator()(int x) const { return 3 * x - 7; }
};

struct DivisibleBy3 {
  __host__ __device__ bool operator()(int x) const { return x % 3 == 0; }
};

void ThrustSort(Rng& rng, int n) {
  std::vector<int> h(n);
  for (int& x : h) x = static_cast<int>(rng.Next() >> 32);
  thrust::device_vector<int> d(h.begin(), h.end());
  thrust::sort(d.begin(), d.end());
  std::sort(h.begin(), h.end());
  Expect(Same(ToHost(d), h), "thrust::sort");
}

void ThrustSortByKey(Rng& rng, int n) {
  std::vector<int> keys = RandomInts(rng, n, 0, 1000);  // many equal keys: stability matters
  std::vector<int> values(n);
  std::iota(values.begin(), values.end(), 0);
  thrust::device_vector<int> dk(keys.begin(), keys.end()), dv(values.begin(), values.end());
  thrust::sort_by_key(dk.begin(), dk.end(), dv.begin());
  std::vector<std::pair<int, int>> pairs(n);
  for (int i = 0; i < n; ++i) pairs[i] = {keys[i], values[i]};
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (int i = 0; i < n; ++i) std::tie(keys[i], values[i]) = pairs[i];
  Expect(Same(ToHost(dk), keys), "thrust::sort_by_key keys");
  Expect(Same(ToHost(dv), values), "thrust::sort_by_key values");
}

void ThrustReduceScan(Rng& rng, int n) {
  std::vector<int> h = RandomInts(rng, n, -1000, 1000);
  thrust::device_vector<int> d(h.begin(), h.end()), out(n);
  int sum = thrust::reduce(d.begin(), d.end());
  int max = thrust::reduce(d.begin(), d.end(), INT_MIN, thrust::maximum<int>());
  Expect(sum == std::accumulate(h.begin(), h.end(), 0), "thrust::reduce sum");
  Expect(max == *std::max_element(h.begin(), h.end()), "thrust::reduce max");
  std::vector<int> expect(n);
  thrust::inclusive_scan(d.begin(), d.end(), out.begin());
  std::inclusive_scan(h.begin(), h.end(), expect.begin());
  Expect(Same(ToHost(out), expect), "thrust::inclusive_scan");
  thrust::exclusive_scan(d.begin(), d.end(), out.begin(), 5);
  std::exclusive_scan(h.begin(), h.end(), expect.begin(), 5);
  Expect(Same(ToHost(out), expect), "thrust::exclusive_scan");
}

// 64-bit sums: long long values with their high words in use, unsigned ones wrapping, and
// doubles of halves (exact in any order); whole tiles, one element, a partial warp, many tiles.
void ThrustReduceWide(Rng& rng, int n) {
  for (int m : {n, 1, 33, 4 * n + 7}) {
    std::vector<long long> h(m);
    std::vector<unsigned long long> u(m);
    std::vector<double> f(m);
    for (int i = 0; i < m; ++i) {
      h[i] = static_cast<long long>(rng.Next() % (1ull << 41)) - (1ll << 40);
      u[i] = rng.Next();
      f[i] = static_cast<double>(rng.Int(-1 << 20, 1 << 20)) / 2;
    }
    thrust::device_vector<long long> dh(h.begin(), h.end());
    thrust::device_vector<unsigned long long> du(u.begin(), u.end());
    thrust::device_vector<double> df(f.begin(), f.end());
    Expect(thrust::reduce(dh.begin(), dh.end()) == std::accumulate(h.begin(), h.end(), 0ll),
           "thrust::reduce long long");
    Expect(thrust::reduce(dh.begin(), dh.end(), 7ll, thrust::plus<long long>()) ==
               std::accumulate(h.begin(), h.end(), 7ll),
           "thrust::reduce long long with init");
    Expect(thrust::reduce(dh.begin(), dh.end(), LLONG_MIN, thrust::maximum<long long>()) ==
               *std::max_element(h.begin(), h.end()),
           "thrust::reduce long long max");
    Expect(thrust::reduce(du.begin(), du.end()) == std::accumulate(u.begin(), u.end(), 0ull),
           "thrust::reduce unsigned long long");
    Expect(thrust::reduce(df.begin(), df.end()) == std::accumulate(f.begin(), f.end(), 0.0),
           "thrust::reduce double");
  }
}

void ThrustTransform(Rng& rng, int n) {
  std::vector<float> x(n), y(n), expect(n);
  for (int i = 0; i < n; ++i) x[i] = rng.Uniform(-10, 10), y[i] = rng.Uniform(-10, 10);
  thrust::device_vector<float> dx(x.begin(), x.end()), dy(y.begin(), y.end());
  thrust::transform(dx.begin(), dx.end(), dy.begin(), dy.begin(), Saxpy{2.5f});
  std::vector<float> got = ToHost(dy);
  int bad = 0;
  for (int i = 0; i < n; ++i) bad += !Near(got[i], std::fma(2.5f, x[i], y[i]), 1e-6);
  Expect(bad == 0, "thrust::transform saxpy");

  std::vector<int> h = RandomInts(rng, n, -100000, 100000), hexpect(n);
  thrust::device_vector<int> d(h.begin(), h.end());
  thrust::transform(d.begin(), d.end(), d.begin(), Affine{});
  std::transform(h.begin(), h.end(), hexpect.begin(), Affine{});
  Expect(Same(ToHost(d), hexpect), "thrust::transform affine");
}

void CubRadixSort(Rng& rng, int n) {
  std::vector<unsigned> keys(n);
  for (unsigned& k : keys) k = static_cast<unsigned>(rng.Next());
  DeviceBuf<unsigned> in(keys), out(n);
  CubRun([&](void* t, size_t& b) { return cub::DeviceRadixSort::SortKeys(t, b, in.p, out.p, n); });
  std::sort(keys.begin(), keys.end());
  Expect(Same(out.Get(), keys), "cub::DeviceRadixSort::SortKeys");

  std::vector<float> fkeys(n);
  for (float& k : fkeys) k = rng.Uniform(-1e6f, 1e6f);
  DeviceBuf<float> fin(fkeys), fout(n);
  CubRun(
      [&](void* t, size_t& b) { return cub::DeviceRadixSort::SortKeys(t, b, fin.p, fout.p, n); });
  std::sort(fkeys.begin(), fkeys.end());
  Expect(Same(fout.Get(), fkeys), "cub::DeviceRadixSort::SortKeys float");

  std::vector<int> pk = RandomInts(rng, n, -500, 500), pv(n);
  std::iota(pv.begin(), pv.end(), 0);
  DeviceBuf<int> kin(pk), kout(n), vin(pv), vout(n);
  CubRun([&](void* t, size_t& b) {
    return cub::DeviceRadixSort::SortPairs(t, b, kin.p, kout.p, vin.p, vout.p, n);
  });
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return pk[a] < pk[b]; });
  std::vector<int> ek(n);
  for (int i = 0; i < n; ++i) ek[i] = pk[order[i]];
  Expect(Same(kout.Get(), ek), "cub::DeviceRadixSort::SortPairs keys");
  Expect(Same(vout.Get(), order), "cub::DeviceRadixSort::SortPairs values");
}

void CubReduceScan(Rng& rng, int n) {
  std::vector<int> h = RandomInts(rng, n, -1000, 1000);
  DeviceBuf<int> in(h), out(n), one(1);
  CubRun([&](void* t, size_t& b) { return cub::DeviceReduce::Sum(t, b, in.p, one.p, n); });
  Expect(one.Get()[0] == std::accumulate(h.begin(), h.end(), 0), "cub::DeviceReduce::Sum");
  CubRun([&](void* t, size_t& b) { return cub::DeviceReduce::Max(t, b, in.p, one.p, n); });
  Expect(one.Get()[0] == *std::max_element(h.begin(), h.end()), "cub::DeviceReduce::Max");

  std::vector<int> expect(n);
  CubRun([&](void* t, size_t& b) { return cub::DeviceScan::InclusiveSum(t, b, in.p, out.p, n); });
  std::inclusive_scan(h.begin(), h.end(), expect.begin());
  Expect(Same(out.Get(), expect), "cub::DeviceScan::InclusiveSum");
  CubRun([&](void* t, size_t& b) { return cub::DeviceScan::ExclusiveSum(t, b, in.p, out.p, n); });
  std::exclusive_scan(h.begin(), h.end(), expect.begin(), 0);
  Expect(Same(out.Get(), expect), "cub::DeviceScan::ExclusiveSum");
}

void CubHistogram(Rng& rng, int n) {
  constexpr int kBins = 100, kLower = 0, kUpper = 1000;
  std::vector<int> samples = RandomInts(rng, n, -50, 1050);  // some fall outside every bin
  DeviceBuf<int> in(samples), hist(kBins);
  CubRun([&](void* t, size_t& b) {
    return cub::DeviceHistogram::HistogramEven(t, b, in.p, hist.p, kBins + 1, kLower, kUpper, n);
  });
  std::vector<int> expect(kBins, 0);
  for (int s : samples)
    if (s >= kLower && s < kUpper) ++expect[(s - kLower) * kBins / (kUpper - kLower)];
  Expect(Same(hist.Get(), expect), "cub::DeviceHistogram::HistogramEven");
}

void CubSelect(Rng& rng, int n) {
  std::vector<int> h = RandomInts(rng, n, -10000, 10000), expect;
  std::vector<char> flags(n);
  for (char& f : flags) f = static_cast<char>(rng.Int(0, 2));
  DeviceBuf<int> in(h), out(n), count(1);
  DeviceBuf<char> dflags(flags);

  CubRun([&](void* t, size_t& b) {
    return cub::DeviceSelect::If(t, b, in.p, out.p, count.p, n, DivisibleBy3{});
  });
  std::copy_if(h.begin(), h.end(), std::back_inserter(expect), DivisibleBy3{});
  Expect(count.Get()[0] == static_cast<int>(expect.size()), "cub::DeviceSelect::If count");
  Expect(Same(out.Get(expect.size()), expect), "cub::DeviceSelect::If");

  CubRun([&](void* t, size_t& b) {
    return cub::DeviceSelect::Flagged(t, b, in.p, dflags.p, out.p, count.p, n);
  });
  expect.clear();
  for (int i = 0; i < n; ++i)
    if (flags[i]) expect.push_back(h[i]);
  Expect(count.Get()[0] == static_cast<int>(expect.size()), "cub::DeviceSelect::Flagged count");
  Expect(Same(out.Get(expect.size()), expect), "cub::DeviceSelect::Flagged");

  std::vector<int> runs = RandomInts(rng, n, 0, std::max(1, n / 4));
  std::sort(runs.begin(), runs.end());
  DeviceBuf<int> rin(runs);
  CubRun([&](void* t, size_t& b) {
    return cub::DeviceSelect::Unique(t, b, rin.p, out.p, count.p, n);
  });
  expect.assign(runs.begin(), std::unique(runs.begin(), runs.end()));
  Expect(count.Get()[0] == static_cast<int>(expect.size()), "cub::DeviceSelect::Unique count");
  Expect(Same(out.Get(expect.size()), expect), "cub::DeviceSelect::Unique");
}

}  // namespace

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 65536));
  Rng rng(Flag(argc, argv, "seed", 13));
  ThrustSort(rng, n);
  ThrustSortByKey(rng, n);
  ThrustReduceScan(rng, n);
  ThrustReduceWide(rng, n);
  ThrustTransform(rng, n);
  CubRadixSort(rng, n);
  CubReduceScan(rng, n);
  CubHistogram(rng, n);
  CubSelect(rng, n);
  return Finish(g_failures, "thrust and cub");
}
