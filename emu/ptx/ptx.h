// emu/ptx/ptx.h - load PTX into a decoded Program and run its kernels on the CPU.
//
// This is the whole interface between the emulated driver (emu/) and the PTX
// interpreter (emu/ptx/). The driver loads the PTX from a fat binary, allocates
// the Program's globals in device memory, and launches kernels with a packed
// parameter buffer.
//
//   ASSIGN_OR_RETURN(auto prog, ptx::Load(std::span(&ptx_text, 1)));
//   auto k = prog->FindKernel("_Z9vectorAddPKfS0_Pfi");
//   RETURN_IF_ERROR(ptx::Launch(*prog, *k, config));
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/status.h"

namespace remora::emu::ptx {

// One kernel parameter in the packed buffer (natural alignment, as cudafe packs).
struct ParamInfo {
  uint32_t offset;
  uint32_t size;
};

struct KernelInfo {
  std::string name;                 // mangled .entry name
  std::vector<ParamInfo> params;    // declaration order
  uint32_t param_bytes;             // size of the packed parameter buffer
  uint32_t static_shared_bytes;     // .shared declarations the kernel can reach
  uint32_t local_bytes;             // per-thread .local (depot) size
  uint32_t max_threads_per_block;   // from .maxntid, else 1024
  uint32_t num_regs;                // best-effort count, for cuFuncGetAttribute
  uint32_t cluster[3] = {0, 0, 0};  // the cluster shape it requires (__cluster_dims__), or 0s
  bool explicit_cluster = false;    // it must be launched in clusters (.explicitcluster)
  // Why the interpreter cannot run this kernel: the first instruction form it does not
  // implement, or the first call to a CUDA function it does not serve, that the entry reaches
  // through direct calls ("instruction form not implemented at ..."). Empty when it can.
  std::string unrunnable;
};

// A module-scope .global or .const variable.
struct GlobalInfo {
  std::string name;
  bool is_const;
  bool managed;  // a __managed__ variable (.attribute(.managed)): host code reaches it too
  uint64_t size;
  uint32_t align;
  std::vector<std::byte> init;  // exactly `size` bytes (zeros without an initialiser)
};

// Shared memory every block has beyond its own, as the driver reserves it on sm_80 and later
// (cudaDevAttrReservedSharedMemoryPerBlock): cooperative groups keep a block's barrier words
// and scratch there, found through %reserved_smem_offset_*.
inline constexpr uint32_t kReservedSmemBytes = 1024;

class ProgramImpl;

// A parsed, decoded and linked set of PTX modules. Immutable after Load; safe to
// share across threads.
class Program {
 public:
  const std::vector<KernelInfo>& kernels() const;
  const std::vector<GlobalInfo>& globals() const;
  std::optional<size_t> FindKernel(std::string_view name) const;
  std::optional<size_t> FindGlobal(std::string_view name) const;

  // Implementation detail, owned by emu/ptx.
  const ProgramImpl& impl() const { return *impl_; }
  explicit Program(std::unique_ptr<ProgramImpl> impl);
  ~Program();

 private:
  std::unique_ptr<ProgramImpl> impl_;
};

// Parses, decodes and links one or more PTX modules (several for -rdc builds:
// .extern .func/.global resolve across them).
// Errors: kInvalidPtx naming the module, line and offending token.
Result<std::shared_ptr<const Program>> Load(std::span<const std::string> ptx_sources);

// Device memory is ordinary host memory: a CUdeviceptr is the host address. The
// driver provides this so the interpreter refuses accesses outside every live
// allocation.
class AddressSpace {
 public:
  virtual ~AddressSpace() = default;
  // Finds the live allocation containing `addr`: sets [*base, *base + *size).
  // Returns false if none. Thread-safe; called on the slow path (the
  // interpreter caches the last range it found).
  virtual bool Lookup(uint64_t addr, uint64_t* base, uint64_t* size) const = 0;
};

// The device-side heap behind malloc/free (and new/delete, which call them) in kernels.
// Implementations are thread-safe: every lane of every block may call at once.
class DeviceHeap {
 public:
  virtual ~DeviceHeap() = default;
  // A 16-byte aligned block of `bytes` in device memory, or 0 when the heap cannot hold it
  // (CUDA's malloc returns NULL then; so does a request for 0 bytes).
  virtual uint64_t Malloc(uint64_t bytes) = 0;
  // Frees a block Malloc returned; 0 is ignored. Returns false for any other address
  // (not a live block of this heap).
  virtual bool Free(uint64_t addr) = 0;
};

// A texture or surface object as the interpreter reads it: the driver builds one from
// cuTexObjectCreate / cuSurfObjectCreate. Elements lie in device memory from `base`, in rows of
// `pitch` bytes (x), `height` rows to a slice of `slice_pitch` bytes (y), `depth` slices (z).
// Every element read or written goes through the launch's AddressSpace as ld.global does, so a
// view whose memory was freed faults instead of reading it.
struct TextureView {
  enum class Kind : uint8_t { kUnsigned, kSigned, kFloat };  // kFloat with 16 bits: half
  enum class Address : uint8_t { kWrap, kClamp, kMirror, kBorder };
  uint64_t base = 0;
  uint32_t dims = 1;                          // 1, 2 or 3
  uint64_t width = 0, height = 1, depth = 1;  // in elements
  uint64_t pitch = 0, slice_pitch = 0;        // in bytes
  Kind kind = Kind::kFloat;
  uint8_t channels = 1;       // 1, 2 or 4
  uint8_t channel_bits = 32;  // 8, 16 or 32 (every channel the same)
  // Linear memory (CU_RESOURCE_TYPE_LINEAR): only integer-coordinate fetches, no filtering or
  // address modes; a fetch outside [0, width) reads zeros.
  bool linear = false;
  Address address[3] = {Address::kClamp, Address::kClamp, Address::kClamp};
  bool filter_linear = false;      // CU_TR_FILTER_MODE_LINEAR (float results only)
  bool read_as_integer = false;    // CU_TRSF_READ_AS_INTEGER: 8/16-bit ints not normalized
  bool normalized_coords = false;  // CU_TRSF_NORMALIZED_COORDINATES
  float border[4] = {0, 0, 0, 0};
  bool surface = false;  // a surface object: suld/sust only; a texture: tex/tld4/txq only
  // kLayered: `depth` layers of 1-D or 2-D images, slice_pitch apart (tex.a1d/.a2d, and suld/sust
  // .a1d/.a2d with the layer as z); kCubemap: `depth` = 6 x cubes square faces, in the order
  // +x, -x, +y, -y, +z, -z (tex.cube/.acube). kPlain: dims says what it is.
  enum class Layout : uint8_t { kPlain, kLayered, kCubemap };
  Layout layout = Layout::kPlain;
};

// The driver's live texture and surface objects, looked up by handle at each fetch.
class TextureTable {
 public:
  virtual ~TextureTable() = default;
  // Copies the view of object `handle` into *out; false if there is none. Thread-safe.
  virtual bool Find(uint64_t handle, TextureView* out) const = 0;
};

struct LaunchConfig {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
  std::span<const std::byte> params;           // packed per KernelInfo::params
  std::span<const uint64_t> global_addresses;  // device address of each global, as globals()
  const AddressSpace* memory = nullptr;
  std::function<void(std::string_view)> printf_sink;  // formatted vprintf output
  unsigned workers = 0;  // the most blocks run at once; 0 = as many as the device has cores
  // The most blocks of this launch a GPU of the emulated device's size keeps resident at once
  // (its occupancy times its multiprocessors); 0 = 64Ki threads' worth. Blocks waiting on
  // blocks not yet started run that many at a time beside them (dispatch.h).
  uint64_t resident_blocks = 0;
  // The launching stream's priority (CUDA's order: lower is higher): the device's block
  // dispatcher starts blocks of higher priority grids first (dispatch.h).
  int priority = 0;
  // The storage at global_addresses already holds its address initialisers
  // (ApplyRelocations): Launch leaves it alone. Otherwise Launch writes them
  // whenever global_addresses differ from the previous launch's.
  bool relocated = false;
  // When set and it turns true, the launch stops: no block starts, and running warps stop
  // within a few thousand instructions each. Launch then returns kLaunchTimeout ("cancelled").
  const std::atomic<bool>* cancel = nullptr;
  // Bytes of call stack each thread gets beside its kernel's frame when the program calls
  // functions of its own; a call past it is kLaunchFailure ("call stack overflow").
  uint32_t call_stack_bytes = 16 << 10;
  // Device-side malloc/free; without one a call to either is kLaunchFailure.
  DeviceHeap* heap = nullptr;
  // Parameter buffers of device-side launches (device_runtime.h) until they run; `heap` when
  // unset. A GPU keeps them apart from the heap, in a pool of its own.
  DeviceHeap* launch_pool = nullptr;
  // Texture and surface objects for tex, tld4, txq, suld and sust. Without a table, or for a
  // handle it does not know, those instructions fault with kIllegalAddress naming the handle.
  const TextureTable* textures = nullptr;
  // A cooperative launch (cuLaunchCooperativeKernel): every block is resident at once, as the
  // grid-wide barrier of cooperative_groups needs; blocks take turns on the workers, each
  // running until its warps wait or a warp has run a slice of instructions. Slower than an
  // ordinary launch, whose blocks each run to their end.
  bool cooperative = false;
  // The device address of the launch's zeroed grid workspace, which %envreg1 (high 32 bits)
  // and %envreg2 (low) read, as NVIDIA's driver passes it: grid.sync() traps when it is 0.
  // The driver sets it for cooperative launches only.
  uint64_t grid_workspace = 0;
};

// Writes the address-valued initialisers of `program`'s globals (`.global .u64
// p = x;`, `generic(x)+8`, ...) into the storage at `global_addresses` (one per
// globals(), each already holding its GlobalInfo::init). A driver that shares
// one Program between several modules calls it once per module, at load, and
// launches with LaunchConfig::relocated. REQUIRES: global_addresses.size() ==
// globals().size().
void ApplyRelocations(const Program& program, std::span<const uint64_t> global_addresses);

// Makes the calling thread one of the emulated GPU's: it runs at a lower host
// CPU priority (nice +`nice`, kDeviceNice by default) than the host's threads,
// so the emulated device takes the CPU the host's threads leave, as a GPU takes
// none of theirs, and a host thread waking (a server's, a tenant's) is not kept
// waiting by it. Kernel helpers call it themselves; so should a driver's stream
// workers, those of streams above the least priority with kRankedDeviceNice:
// the work of a stream that outranks others is not left the crumbs of the
// host's CPU. At kDeviceNice the thread also takes SCHED_IDLE: any other
// thread that wakes takes its CPU at once, where under EEVDF a nice-19 thread
// may first finish its slice (milliseconds, the length of several short
// kernels of a higher stream). A thread's nice is only ever raised, and its
// policy never leaves SCHED_IDLE (either would need privilege).
inline constexpr int kDeviceNice = 19;
inline constexpr int kRankedDeviceNice = 5;
void BecomeDeviceThread(int nice = kDeviceNice);

// Runs kernel `kernel` of `program` to completion on the device's cores, shared block by
// block with every other launch running meanwhile (dispatch.h); the calling thread runs
// some of the blocks. A cooperative launch runs on threads of its own, all blocks resident.
// Errors: kIllegalAddress (names kernel, address, space, block/thread),
// kLaunchTimeout (LaunchConfig::cancel turned true),
// kLaunchFailure (an unsupported instruction, named; a trap), kAssert
// (__assertfail: file, line, message, function), kInvalidValue (bad
// configuration: too many threads, too much shared memory).
// Thread-safe: concurrent launches of one Program on different threads are fine.
Status Launch(const Program& program, size_t kernel, const LaunchConfig& config);

}  // namespace remora::emu::ptx
