// client_stub/memcpy.h - copies and memsets between host and device, over either transport.
//
// shm: host memory inside the arena (pinned) travels as an arena offset, one pass;
// pageable memory is chunked through the staging slots (proto/arena.h), several
// chunks in flight: host-to-device chunks are posted, the server frees each slot;
// device-to-host chunks are posted in batches that one synchronous piece waits
// for, a batch copied out while the device fills the next. Remote: the bytes go
// inline, in chunks that fit one frame. Stream semantics follow CUDA: an async
// copy from pageable memory returns once the data is staged; a device-to-host
// copy into pageable memory is synchronous.
#pragma once

#include <driver_types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "proto/inline.h"

namespace remora::client_stub {

// How a copy of `total` bytes splits into pieces of at most `chunk` bytes.
struct Chunking {
  uint64_t total, chunk;
  // REQUIRES: chunk > 0.
  uint64_t count() const { return total == 0 ? 0 : (total - 1) / chunk + 1; }
  uint64_t offset(uint64_t i) const { return i * chunk; }
  uint64_t size(uint64_t i) const { return std::min(chunk, total - offset(i)); }
};

// The stream the runtime's synchronous copy entry points pass to their async twins: no stream,
// wait at the end. Never a stream handle the tenant holds.
inline const cudaStream_t kSynchronous = reinterpret_cast<cudaStream_t>(~uintptr_t{0});

// cudaMemcpy/cudaMemcpyAsync for every kind. Errors: cudaErrorInvalidMemcpyDirection
// for an unknown kind; cudaErrorInvalidValue for a null pointer with n > 0 or a
// range that runs past the end of a known allocation; else the server's answer.
cudaError_t Copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream,
                 bool async);

// cudaMemcpy2D(Async): `height` rows of `width` bytes; one copy when both pitches
// equal the width, else one per row (only the last row of a synchronous copy
// waits). Errors: cudaErrorInvalidPitchValue if a pitch is below the width; as Copy.
cudaError_t Copy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                   size_t height, cudaMemcpyKind kind, cudaStream_t stream, bool async);

// `depth` slices of a 2-D copy, each slice `dslice`/`sslice` bytes after the last (3-D copies
// of linear memory). Errors as Copy2D.
cudaError_t Copy3D(void* dst, size_t dpitch, size_t dslice, const void* src, size_t spitch,
                   size_t sslice, size_t width, size_t height, size_t depth, cudaMemcpyKind kind,
                   cudaStream_t stream, bool async);

// cudaMemset2D(Async), row by row unless pitch == width.
cudaError_t Fill2D(void* dst, size_t pitch, int value, size_t width, size_t height,
                   cudaStream_t stream, bool async);

// cudaMemset/cudaMemsetAsync: fills n bytes at dst with (unsigned char)value.
cudaError_t Fill(void* dst, int value, size_t n, cudaStream_t stream, bool async);

// Fills `height` rows of `width` elements of `elem` (1, 2 or 4) bytes, `pitch` bytes apart
// (ignored for one row), with `value`'s low `elem` bytes (cuMemsetD16/D32 and 2-D forms, a
// graph's memset node): one byte fill when the pattern's bytes agree, else the pattern copied
// in from the host in pieces of at most 16 MiB (an async copy from host memory returns once
// staged, so a piece may be reused). cudaErrorInvalidValue for a misaligned `dst` or a pitch
// below the row.
cudaError_t FillPattern(void* dst, size_t pitch, uint32_t value, size_t elem, size_t width,
                        size_t height, cudaStream_t stream, bool async);

// Copies by address, whatever the process's tables say the pointers are (a mirrored managed
// block's host pages share their device copy's address, mirror.h), on server stream `stream`:
// host-to-device pieces are stream-ordered (the last one waits unless `async`), a
// device-to-host copy waits.
cudaError_t HostToDeviceAt(uint64_t dst, const void* src, size_t n, uint64_t stream, bool async);
cudaError_t DeviceToHostAt(void* dst, uint64_t src, size_t n, uint64_t stream);

}  // namespace remora::client_stub
