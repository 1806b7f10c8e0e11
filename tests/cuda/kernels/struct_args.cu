// tests/cuda/kernels/struct_args.cu - structs passed to kernels by value (mixed alignment, arrays,
// nesting).
#include <vector>

#include "common.h"

struct Params {  // 32 bytes with padding: the layout cudafe and PTX must agree on
  float scale;
  int offset;
  double bias;
  const float* src;
  char tag[3];
};

struct Vec3 {
  float x, y, z;
};
struct Transform {
  Vec3 row[3];
  Vec3 translate;
  short flags;
};

__global__ void applyParams(Params p, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(p.src[i] * p.scale + p.offset + p.bias) + p.tag[i % 3];
}

__global__ void transform(Transform t, const Vec3* in, Vec3* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Vec3 v = in[i], r;
  r.x = t.row[0].x * v.x + t.row[0].y * v.y + t.row[0].z * v.z + t.translate.x;
  r.y = t.row[1].x * v.x + t.row[1].y * v.y + t.row[1].z * v.z + t.translate.y;
  r.z = t.row[2].x * v.x + t.row[2].y * v.y + t.row[2].z * v.z + t.translate.z;
  if (t.flags & 1) r.x = -r.x;
  out[i] = r;
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 3000));
  Rng rng(Flag(argc, argv, "seed", 12));
  std::vector<float> src(n), out(n);
  for (float& s : src) s = rng.Uniform(-5, 5);
  std::vector<Vec3> pts(n), res(n);
  for (Vec3& p : pts) p = {rng.Uniform(-1, 1), rng.Uniform(-1, 1), rng.Uniform(-1, 1)};

  float *d_src, *d_out;
  Vec3 *d_pts, *d_res;
  CHECK(cudaMalloc(&d_src, n * sizeof(float)));
  CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CHECK(cudaMalloc(&d_pts, n * sizeof(Vec3)));
  CHECK(cudaMalloc(&d_res, n * sizeof(Vec3)));
  CHECK(cudaMemcpy(d_src, src.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_pts, pts.data(), n * sizeof(Vec3), cudaMemcpyHostToDevice));

  Params p{2.5f, -7, 0.125, d_src, {1, 2, 3}};
  applyParams<<<(n + 255) / 256, 256>>>(p, d_out, n);
  CHECK(cudaGetLastError());
  Transform t;
  for (int r = 0; r < 3; ++r)
    t.row[r] = {rng.Uniform(-2, 2), rng.Uniform(-2, 2), rng.Uniform(-2, 2)};
  t.translate = {1.0f, -2.0f, 3.0f};
  t.flags = 1;
  transform<<<(n + 127) / 128, 128>>>(t, d_pts, d_res, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(res.data(), d_res, n * sizeof(Vec3), cudaMemcpyDeviceToHost));

  int failures = 0;
  for (int i = 0; i < n; ++i) {
    float ref = static_cast<float>(src[i] * p.scale + p.offset + p.bias) + p.tag[i % 3];
    failures += !Near(out[i], ref, 1e-6);
    const Vec3& v = pts[i];
    float rx = t.row[0].x * v.x + t.row[0].y * v.y + t.row[0].z * v.z + t.translate.x;
    float ry = t.row[1].x * v.x + t.row[1].y * v.y + t.row[1].z * v.z + t.translate.y;
    float rz = t.row[2].x * v.x + t.row[2].y * v.y + t.row[2].z * v.z + t.translate.z;
    failures += !Near(res[i].x, -rx, 1e-5) + !Near(res[i].y, ry, 1e-5) + !Near(res[i].z, rz, 1e-5);
  }
  CHECK(cudaFree(d_src));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_pts));
  CHECK(cudaFree(d_res));
  return Finish(failures, "struct_args");
}
