// tests/emu_ptx/kernels/virtual.h - a class hierarchy with virtual functions and virtual
// destructors, shared by virtual.cu and virtual_rdc.cu (an -rdc pair).
#pragma once

// Destructor calls per class, counted by the destructors themselves.
extern __device__ int g_destroyed[4];

struct Shape {
  __device__ virtual ~Shape() { atomicAdd(&g_destroyed[0], 1); }
  __device__ virtual float area() const = 0;
  __device__ virtual int kind() const { return 0; }
  __device__ virtual float scaled(float s) const { return s * area(); }
};

struct Rect : Shape {
  float w, h;
  __device__ Rect(float w_, float h_) : w(w_), h(h_) {}
  __device__ ~Rect() override { atomicAdd(&g_destroyed[1], 1); }
  __device__ float area() const override { return w * h; }
  __device__ int kind() const override { return 1; }
};

struct Square : Rect {
  __device__ explicit Square(float s) : Rect(s, s) {}
  __device__ ~Square() override { atomicAdd(&g_destroyed[2], 1); }
  __device__ int kind() const override { return 2; }
  __device__ float scaled(float s) const override { return s * s * area(); }
};

// Defined out of line in virtual_rdc.cu (its vtable lives there) in -rdc builds, below otherwise.
struct Circle : Shape {
  float r;
  __device__ explicit Circle(float r_) : r(r_) {}
  __device__ ~Circle() override;
  __device__ float area() const override;
  __device__ int kind() const override;
};

// Every object fits one slot of this size and alignment.
constexpr int kSlot = 32;
