// Texture and surface objects over 3-D, layered and cubemap CUDA arrays (cudaMalloc3DArray with
// cudaArrayLayered / cudaArrayCubemap), filled by cudaMemcpy3D: tex1DLayered, tex2DLayered with
// wrapping normalized coordinates, texCubemap at every face's texel centres, tex3D, and
// surf2DLayeredwrite read back by cudaMemcpy3D; each against the host's data. (On a GPU, Remora
// refuses these objects by name: its arrays are pitched device memory, not the driver's.)
#include <vector>

#include "common.h"

namespace {

constexpr int kW = 24, kH = 12, kLayers = 5, kFace = 8, kDepth = 4;

__global__ void ReadLayered2D(cudaTextureObject_t t, float* out) {
  const int x = threadIdx.x, y = blockIdx.x, layer = blockIdx.y;
  // Normalized coordinates one whole width to the right: wrapping reads the same texel.
  const float u = (x + 0.5f) / kW + 1.0f, v = (y + 0.5f) / kH;
  out[(layer * kH + y) * kW + x] = tex2DLayered<float>(t, u, v, layer);
}

__global__ void ReadLayered1D(cudaTextureObject_t t, float* out) {
  const int x = threadIdx.x, layer = blockIdx.x;
  out[layer * kW + x] = tex1DLayered<float>(t, x + 0.5f, layer);
}

// Texel (i, j) of `face` at its centre: the direction the cubemap table maps there.
__global__ void ReadCube(cudaTextureObject_t t, float* out) {
  const int i = threadIdx.x, j = threadIdx.y, face = blockIdx.x;
  const float s = 2.0f * (i + 0.5f) / kFace - 1.0f, c = 2.0f * (j + 0.5f) / kFace - 1.0f;
  float x = 0, y = 0, z = 0;
  switch (face) {
    case 0: x = 1, y = -c, z = -s; break;
    case 1: x = -1, y = -c, z = s; break;
    case 2: x = s, y = 1, z = c; break;
    case 3: x = s, y = -1, z = -c; break;
    case 4: x = s, y = -c, z = 1; break;
    default: x = -s, y = -c, z = -1; break;
  }
  out[(face * kFace + j) * kFace + i] = texCubemap<float>(t, x, y, z);
}

__global__ void Read3D(cudaTextureObject_t t, float* out) {
  const int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
  out[(z * kH + y) * kW + x] = tex3D<float>(t, x + 0.5f, y + 0.5f, z + 0.5f);
}

__global__ void WriteLayered(cudaSurfaceObject_t s) {
  const int x = threadIdx.x, y = blockIdx.x, layer = blockIdx.y;
  surf2DLayeredwrite(float(layer * 1000 + y * 100 + x), s, x * int(sizeof(float)), y, layer);
}

cudaArray_t Fill(const std::vector<float>& host, int w, int h, int d, unsigned flags) {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t a = nullptr;
  CHECK(cudaMalloc3DArray(&a, &desc, make_cudaExtent(w, h, d), flags));
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(const_cast<float*>(host.data()), w * sizeof(float), w,
                                 h ? h : 1);
  p.dstArray = a;
  p.extent = make_cudaExtent(w, h ? h : 1, d);
  p.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&p));
  return a;
}

cudaTextureObject_t Texture(cudaArray_t a, bool normalized, cudaTextureAddressMode mode) {
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = a;
  cudaTextureDesc td{};
  td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = mode;
  td.filterMode = cudaFilterModePoint;
  td.readMode = cudaReadModeElementType;
  td.normalizedCoords = normalized;
  cudaTextureObject_t t = 0;
  CHECK(cudaCreateTextureObject(&t, &res, &td, nullptr));
  return t;
}

std::vector<float> Random(Rng& rng, size_t n) {
  std::vector<float> v(n);
  for (float& f : v) f = float(rng.Next() % 100000) / 7.0f;
  return v;
}

// Runs `launch` writing n floats into device memory; compares them with `want`.
template <class F>
void Check(const char* what, const std::vector<float>& want, F launch) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, want.size() * sizeof(float)));
  launch(d);
  CHECK(cudaGetLastError());
  std::vector<float> got(want.size());
  CHECK(cudaMemcpy(got.data(), d, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      std::printf("FAIL: %s: element %zu is %g, want %g\n", what, i, got[i], want[i]);
      std::exit(1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(uint64_t(Flag(argc, argv, "seed", 3)));

  const std::vector<float> layered = Random(rng, size_t(kW) * kH * kLayers);
  cudaArray_t a2 = Fill(layered, kW, kH, kLayers, cudaArrayLayered);
  cudaTextureObject_t t2 = Texture(a2, true, cudaAddressModeWrap);
  Check("tex2DLayered", layered, [&](float* d) { ReadLayered2D<<<dim3(kH, kLayers), kW>>>(t2, d); });

  const std::vector<float> rows = Random(rng, size_t(kW) * kLayers);
  cudaArray_t a1 = Fill(rows, kW, 0, kLayers, cudaArrayLayered);
  cudaTextureObject_t t1 = Texture(a1, false, cudaAddressModeClamp);
  Check("tex1DLayered", rows, [&](float* d) { ReadLayered1D<<<kLayers, kW>>>(t1, d); });

  const std::vector<float> faces = Random(rng, size_t(kFace) * kFace * 6);
  cudaArray_t ac = Fill(faces, kFace, kFace, 6, cudaArrayCubemap);
  cudaTextureObject_t tc = Texture(ac, true, cudaAddressModeClamp);
  Check("texCubemap", faces, [&](float* d) { ReadCube<<<6, dim3(kFace, kFace)>>>(tc, d); });

  const std::vector<float> volume = Random(rng, size_t(kW) * kH * kDepth);
  cudaArray_t a3 = Fill(volume, kW, kH, kDepth, 0);
  cudaTextureObject_t t3 = Texture(a3, false, cudaAddressModeClamp);
  Check("tex3D", volume, [&](float* d) { Read3D<<<dim3(kH, kDepth), kW>>>(t3, d); });

  // A layered surface written by a kernel, read back through a 3-D copy.
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t as = nullptr;
  CHECK(cudaMalloc3DArray(&as, &desc, make_cudaExtent(kW, kH, kLayers),
                          cudaArrayLayered | cudaArraySurfaceLoadStore));
  cudaResourceDesc rs{};
  rs.resType = cudaResourceTypeArray;
  rs.res.array.array = as;
  cudaSurfaceObject_t s = 0;
  CHECK(cudaCreateSurfaceObject(&s, &rs));
  WriteLayered<<<dim3(kH, kLayers), kW>>>(s);
  CHECK(cudaGetLastError());
  std::vector<float> back(size_t(kW) * kH * kLayers);
  cudaMemcpy3DParms p{};
  p.srcArray = as;
  p.dstPtr = make_cudaPitchedPtr(back.data(), kW * sizeof(float), kW, kH);
  p.extent = make_cudaExtent(kW, kH, kLayers);
  p.kind = cudaMemcpyDeviceToHost;
  CHECK(cudaMemcpy3D(&p));
  for (int l = 0; l < kLayers; ++l)
    for (int y = 0; y < kH; ++y)
      for (int x = 0; x < kW; ++x)
        REQUIRE(back[(size_t(l) * kH + y) * kW + x] == float(l * 1000 + y * 100 + x));

  CHECK(cudaDestroySurfaceObject(s));
  for (cudaTextureObject_t t : {t2, t1, tc, t3}) CHECK(cudaDestroyTextureObject(t));
  for (cudaArray_t a : {a2, a1, ac, a3, as}) CHECK(cudaFreeArray(a));
  std::printf("PASS\n");
  return 0;
}
