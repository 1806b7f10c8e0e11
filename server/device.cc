// server/device.cc - context, description and stream pool of the server's GPU.
#include "server/device.h"

#include "server/log.h"

namespace remora::server {

// Bytes kept back from tenants for the context itself (module images, stacks).
static constexpr uint64_t kContextReserve = 256ull << 20;

Result<std::unique_ptr<Device>> Device::Open(std::shared_ptr<DriverTable> drv) {
  auto d = std::make_unique<Device>();
  d->drv_ = std::move(drv);
  const DriverTable& t = *d->drv_;
  RETURN_IF_ERROR(d->Check(t.cuDeviceGet(&d->dev_, 0), "cuDeviceGet"));
  RETURN_IF_ERROR(
      d->Check(t.cuDevicePrimaryCtxRetain(&d->ctx_, d->dev_), "cuDevicePrimaryCtxRetain"));
  RETURN_IF_ERROR(d->MakeCurrent());

  char name[256] = {};
  RETURN_IF_ERROR(d->Check(t.cuDeviceGetName(name, sizeof name, d->dev_), "cuDeviceGetName"));
  size_t total = 0;
  RETURN_IF_ERROR(d->Check(t.cuDeviceTotalMem(&total, d->dev_), "cuDeviceTotalMem"));
  CUuuid uuid{};
  (void)t.cuDeviceGetUuid(&uuid, d->dev_);
  int version = 0;
  (void)t.cuDriverGetVersion(&version);
  d->info_.set_name(name);
  d->info_.set_total_mem(total);
  d->info_.set_uuid(std::string(uuid.bytes, sizeof uuid.bytes));
  d->info_.set_driver_version(version);
  for (int a = 0; a < CU_DEVICE_ATTRIBUTE_MAX; ++a) {
    int v = 0;
    if (a == 0 ||
        t.cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a), d->dev_) != CUDA_SUCCESS)
      v = 0;
    d->info_.add_attributes(v);
  }
  size_t free = 0, tot = 0;
  RETURN_IF_ERROR(d->Check(t.cuMemGetInfo(&free, &tot), "cuMemGetInfo"));
  d->usable_ = free > kContextReserve ? free - kContextReserve : 0;
  Log(Level::kInfo, "device",
      {{"name", name},
       {"total_mem", total},
       {"usable_mem", d->usable_},
       {"driver", t.library},
       {"emulated", t.emulated ? "yes" : "no"}});
  return d;
}

Device::~Device() {
  if (!ctx_) return;
  if (MakeCurrent().ok()) {
    for (CUstream s : pool_) (void)drv_->cuStreamDestroy(s);
  }
  (void)drv_->cuDevicePrimaryCtxRelease(dev_);
}

Status Device::MakeCurrent() const {
  return Check(drv_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

Result<CUstream> Device::AcquireStream() {
  {
    std::lock_guard lock(pool_mu_);
    if (!pool_.empty()) {
      CUstream s = pool_.back();
      pool_.pop_back();
      return s;
    }
  }
  CUstream s = nullptr;
  RETURN_IF_ERROR(Check(drv_->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  return s;
}

void Device::ReleaseStream(CUstream s) {
  if (drv_->cuStreamSynchronize(s) != CUDA_SUCCESS) {
    // A stream whose work failed is not reused.
    (void)drv_->cuStreamDestroy(s);
    return;
  }
  std::lock_guard lock(pool_mu_);
  pool_.push_back(s);
}

Status Device::Check(CUresult r, const char* what) const {
  if (r == CUDA_SUCCESS) return OkStatus();
  return Error(ToCudaError(r), std::string(what) + ": " + drv_->Describe(r));
}

}  // namespace remora::server
