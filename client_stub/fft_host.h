// client_stub/fft_host.h - discrete Fourier transforms on the host, in double precision: what
// the stub libcufft.so.12 computes on the emulated GPU, whose interpreter cannot run cuFFT's
// machine code.
#pragma once

#include <complex>
#include <span>

namespace remora::client_stub::fft {

using Complex = std::complex<double>;

// Transforms `data`, a dense row-major array of dims n[0] x ... x n[rank-1] (each >= 1), in
// place: X[k] = sum over j of x[j] * exp(sign * 2 pi i * sum_d j_d k_d / n_d), unnormalized, as
// cuFFT defines its forward (sign -1) and inverse (sign +1) transforms. Any length: powers of two
// by radix 2, others by Bluestein's chirp convolution. data.size() must be the product of n.
void Transform(std::span<Complex> data, std::span<const long long> n, int sign);

}  // namespace remora::client_stub::fft
