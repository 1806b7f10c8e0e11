// tests/fatbin/wrapper_test.cc - WrapperImages on the wrappers nvcc's own host code registers.
//
// This binary links nvcc-built objects (whole.o: wrapper v1; rdc_a.o, rdc_b.o and
// their device link: wrapper v2) but no CUDA runtime: the __cuda* entry points
// below stand in for it and record what the objects' constructors register
// before main runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fatbin/fatbin.h"

namespace {

struct Registry {
  std::vector<const void*> wrappers;
  std::vector<std::string> kernels;
};
Registry& Registered() {
  static Registry registry;  // constructed on first use, before main
  return registry;
}
void* g_handle = nullptr;

}  // namespace

extern "C" {
void** __cudaRegisterFatBinary(void* wrapper) {
  Registered().wrappers.push_back(wrapper);
  return &g_handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterFunction(void**, const char*, char*, const char* name, int, void*, void*, void*,
                            void*, int*) {
  Registered().kernels.emplace_back(name);
}
char __cudaInitModule(void**) {
  return 0;
}
// Referenced by the kernels' host stubs; never called since nothing launches.
int __cudaPopCallConfiguration(void*, void*, void*, void*) {
  return 1;
}
int __cudaGetKernel(void*, const void*) {
  return 1;
}
int __cudaLaunchKernel(void*) {
  return 1;
}
}

namespace remora::fatbin {
namespace {

struct RawWrapper {
  uint32_t magic, version;
  const void* data;
  const void* fatbins;
};

const void* RegisteredWrapper(uint32_t version) {
  for (const void* w : Registered().wrappers)
    if (static_cast<const RawWrapper*>(w)->version == version) return w;
  return nullptr;
}

bool HasKernel(const std::string& name) {
  for (const std::string& k : Registered().kernels)
    if (k == name) return true;
  return false;
}

TEST(WrapperImages, WholeProgramIsVersion1) {
  const void* wrapper = RegisteredWrapper(1);
  ASSERT_NE(wrapper, nullptr) << "whole.o did not register a v1 wrapper";
  EXPECT_TRUE(HasKernel("_Z11wholeKernelPi"));
  auto images = WrapperImages(wrapper);
  ASSERT_TRUE(images.ok()) << images.status().ToString();
  ASSERT_EQ(images->size(), 1u);
  EXPECT_EQ((*images)[0].data(), static_cast<const RawWrapper*>(wrapper)->data);
  auto ptx = SelectPtx((*images)[0], 75);
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_NE(ptx->find(".entry _Z11wholeKernelPi("), std::string::npos);
}

TEST(WrapperImages, RdcIsVersion2WithPerUnitFatbins) {
  const void* wrapper = RegisteredWrapper(2);
  ASSERT_NE(wrapper, nullptr) << "the -rdc objects did not register a v2 wrapper";
  EXPECT_TRUE(HasKernel("_Z9rdcCallerPi"));
  EXPECT_TRUE(HasKernel("_Z8rdcOtherPi"));
  auto images = WrapperImages(wrapper);
  ASSERT_TRUE(images.ok()) << images.status().ToString();
  ASSERT_EQ(images->size(), 3u);  // linked + rdc_a + rdc_b

  // The linked fatbin holds only the linked sm_75 ELF.
  auto linked = Parse((*images)[0]);
  ASSERT_TRUE(linked.ok()) << linked.status().ToString();
  ASSERT_FALSE(linked->empty());
  for (const Entry& e : *linked) EXPECT_EQ(e.kind, Kind::kElf);
  EXPECT_EQ(SelectPtx((*images)[0], 75).status().code(), err::kNoKernelImage);

  std::string all_ptx;
  for (size_t i = 1; i < images->size(); ++i) {
    auto ptx = SelectPtx((*images)[i], 75);
    ASSERT_TRUE(ptx.ok()) << i << ": " << ptx.status().ToString();
    all_ptx += *ptx;
  }
  EXPECT_NE(all_ptx.find(".entry _Z9rdcCallerPi("), std::string::npos);
  EXPECT_NE(all_ptx.find(".entry _Z8rdcOtherPi("), std::string::npos);
  EXPECT_NE(all_ptx.find(".visible .func (.param .b32 func_retval0) _Z5twicei("),
            std::string::npos);
}

TEST(WrapperImages, RefusesBadWrappers) {
  const RawWrapper* good = static_cast<const RawWrapper*>(RegisteredWrapper(1));
  ASSERT_NE(good, nullptr);
  const uint64_t not_a_fatbin[4] = {0x1234, 0, 0, 0};
  const RawWrapper bad[] = {
      {0x466243B0, 1, good->data, nullptr},
      {kWrapperMagic, 3, good->data, nullptr},
      {kWrapperMagic, 1, nullptr, nullptr},
      {kWrapperMagic, 1, not_a_fatbin, nullptr},
  };
  for (const RawWrapper& w : bad) {
    auto images = WrapperImages(&w);
    ASSERT_FALSE(images.ok());
    EXPECT_EQ(images.status().code(), err::kInvalidPtx);
  }
  EXPECT_EQ(WrapperImages(nullptr).status().code(), err::kInvalidPtx);

  const void* array[] = {not_a_fatbin, nullptr};
  RawWrapper v2 = {kWrapperMagic, 2, good->data, array};
  EXPECT_EQ(WrapperImages(&v2).status().code(), err::kInvalidPtx);
  array[0] = good->data;
  auto images = WrapperImages(&v2);
  ASSERT_TRUE(images.ok());
  EXPECT_EQ(images->size(), 2u);
}

}  // namespace
}  // namespace remora::fatbin
