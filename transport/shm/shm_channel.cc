// transport/shm/shm_channel.cc - ShmListener, ShmConnect and ShmChannel.
#include "transport/shm/shm_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <type_traits>

namespace remora::transport {

using shm::ControlBlock;
using shm::ErrnoMessage;
using shm::HandshakeHeader;
using shm::Mapping;
using shm::ShmLayout;
using shm::SpscRing;
using shm::UniqueFd;

namespace {

// Ring record type of a frame: FrameHeader bytes, then the body.
constexpr uint32_t kFrameRecord = 1;
static_assert(std::is_trivially_copyable_v<FrameHeader> && sizeof(FrameHeader) == 16);

std::span<std::byte> HeaderBytes(FrameHeader& h) {
  return {reinterpret_cast<std::byte*>(&h), sizeof h};
}

[[gnu::cold, gnu::noinline]] Status Unavailable(const char* why) {
  return Error(err::kDevicesUnavailable, why);
}

[[gnu::cold, gnu::noinline]] Status BodyTooLong(size_t size, size_t max) {
  return Error(err::kInvalidValue, "shm: frame body of " + std::to_string(size) +
                                       " bytes exceeds max_body " + std::to_string(max));
}

[[gnu::cold, gnu::noinline]] Status InitError(const std::string& path, const std::string& why) {
  return Error(err::kInitializationError, "shm connect " + path + ": " + why);
}

Status FillSockaddr(const std::string& path, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return Error(err::kInvalidValue, "shm: socket path empty or longer than " +
                                         std::to_string(sizeof addr.sun_path - 1) + " bytes");
  std::memcpy(addr.sun_path, path.data(), path.size());
  return OkStatus();
}

// Milliseconds poll() may sleep before `deadline`, -1 for never.
int PollTimeoutMs(Deadline deadline) {
  using namespace std::chrono;
  if (deadline.at == steady_clock::time_point::max()) return -1;
  const auto left = deadline.at - steady_clock::now();
  if (left <= nanoseconds::zero()) return 0;
  const auto ms = duration_cast<milliseconds>(left + milliseconds(1) - nanoseconds(1)).count();
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

// Where the server asks the kernel to map a session: a window at 32 TiB, below
// PIE executables, heaps and shared libraries (and above ASan's shadow), so the
// same range is very likely free in the client too. Sessions step through it
// 1 GiB-aligned; the kernel treats the hint as a hint and maps elsewhere when
// it is taken.
void* MapHint(uint64_t bytes) {
  constexpr uint64_t kBase = uint64_t{32} << 40, kWindow = uint64_t{8} << 40, kAlign = 1 << 30;
  static std::atomic<uint64_t> next{0};
  const uint64_t stride = (bytes + kAlign - 1) / kAlign * kAlign;
  const uint64_t slots = stride == 0 || stride > kWindow ? 1 : kWindow / stride;
  const uint64_t i = next.fetch_add(1, std::memory_order_relaxed) % slots;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(kBase + i * stride));
}

bool PeerCred(int fd, PeerInfo& peer) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  peer.pid = cred.pid;
  peer.uid = cred.uid;
  return true;
}

}  // namespace

// Builds channels for Accept and ShmConnect (ShmChannel's constructor is private).
struct ShmChannelFactory {
  static Result<std::unique_ptr<Channel>> Make(ShmChannel::Side side, UniqueFd sock, Mapping map,
                                               const ShmLayout& layout, PeerInfo peer,
                                               shm::WaitOptions wait) {
    std::byte* base = map.data();
    std::span<std::byte> request(base + layout.request_offset,
                                 SpscRing::RegionSize(layout.request_capacity));
    std::span<std::byte> reply(base + layout.reply_offset,
                               SpscRing::RegionSize(layout.reply_capacity));
    const bool server = side == ShmChannel::Side::kServer;
    ASSIGN_OR_RETURN(
        SpscRing::Producer out,
        SpscRing::Producer::Attach(server ? reply : request,
                                   server ? layout.reply_capacity : layout.request_capacity));
    ASSIGN_OR_RETURN(
        SpscRing::Consumer in,
        SpscRing::Consumer::Attach(server ? request : reply,
                                   server ? layout.request_capacity : layout.reply_capacity));
    return std::unique_ptr<Channel>(new ShmChannel(side, std::move(sock), std::move(map), layout,
                                                   std::move(out), std::move(in), std::move(peer),
                                                   wait));
  }
};

// ---- ShmChannel ----

ShmChannel::ShmChannel(Side side, UniqueFd sock, Mapping map, const ShmLayout& layout,
                       SpscRing::Producer out, SpscRing::Consumer in, PeerInfo peer,
                       shm::WaitOptions wait)
    : sock_(std::move(sock)),
      map_(std::move(map)),
      control_(std::launder(reinterpret_cast<ControlBlock*>(map_.data()))),
      own_state_(side == Side::kServer ? &control_->server_state : &control_->client_state),
      peer_state_(side == Side::kServer ? &control_->client_state : &control_->server_state),
      out_(std::move(out)),
      in_(std::move(in)),
      wait_(wait),
      arena_(map_.data() + layout.arena_offset, layout.arena_size),
      peer_(std::move(peer)),
      max_body_(out_.max_payload() - sizeof(FrameHeader)) {}

ShmChannel::~ShmChannel() {
  Close();
}

bool ShmChannel::Stopped() const {
  return closed_.load(std::memory_order_seq_cst) || peer_lost_.load(std::memory_order_seq_cst) ||
         peer_state_->load(std::memory_order_seq_cst) != shm::kSideOpen;
}

bool ShmChannel::PeerAlive() const {
  return !closed_.load(std::memory_order_acquire) && !peer_lost_.load(std::memory_order_acquire) &&
         peer_state_->load(std::memory_order_acquire) == shm::kSideOpen;
}

Status ShmChannel::Send(const FrameHeader& header, std::span<const std::byte> body) {
  if (body.size() > max_body_) [[unlikely]]
    return BodyTooLong(body.size(), max_body_);
  const size_t length = sizeof(FrameHeader) + body.size();
  std::optional<Deadline> full_until;  // set when the ring is first found full
  for (;;) {
    if (Stopped()) [[unlikely]]
      return Unavailable(closed_.load() ? "shm: channel closed" : "shm: peer is gone");
    ASSIGN_OR_RETURN(std::byte * p, out_.TryClaim(length));
    if (p != nullptr) [[likely]] {
      std::memcpy(p, &header, sizeof header);
      if (!body.empty()) std::memcpy(p + sizeof header, body.data(), body.size());
      if (out_.Commit(kFrameRecord)) [[unlikely]]
        RingDoorbell();  // the peer's receiver is armed (asleep in epoll)
      return OkStatus();
    }
    if (!full_until) {
      const int64_t timeout = send_timeout_ns_.load(std::memory_order_relaxed);
      full_until =
          timeout < 0 ? Deadline::Never() : Deadline::In(std::chrono::nanoseconds(timeout));
    }
    if (!wait_.Wait(
            out_.space_waiter(), [&] { return out_.HasSpace(length) || Stopped(); }, *full_until,
            [&] { CheckPeer(); })) {
      Close();
      return Unavailable(("shm: the peer read nothing for " +
                          std::to_string(send_timeout_ns_.load() / 1'000'000) +
                          " ms while its ring was full; channel closed")
                             .c_str());
    }
  }
}

void ShmChannel::SetSendTimeout(std::chrono::nanoseconds timeout) {
  send_timeout_ns_.store(timeout.count() < 0 ? -1 : timeout.count(), std::memory_order_relaxed);
}

Status ShmChannel::Receive(Frame& out, Deadline deadline) {
  for (;;) {
    if (closed_.load(std::memory_order_acquire)) [[unlikely]]
      return Unavailable("shm: channel closed");
    ASSIGN_OR_RETURN(uint32_t type, in_.TryRead(HeaderBytes(out.header), out.body));
    if (type == kFrameRecord) [[likely]]
      return OkStatus();
    if (type != 0) [[unlikely]]
      return Unavailable("shm: record of unknown type in the ring");
    if (Stopped()) [[unlikely]] {
      // The peer's last commits precede its state store or its death: drain them first.
      ASSIGN_OR_RETURN(type, in_.TryRead(HeaderBytes(out.header), out.body));
      if (type == kFrameRecord) return OkStatus();
      return Unavailable(closed_.load() ? "shm: channel closed" : "shm: peer is gone");
    }
    shm::WaitStrategy wait = wait_;
    if (const int64_t spin = receive_spin_ns_.load(std::memory_order_relaxed); spin >= 0)
      wait = shm::WaitStrategy({.spin = std::chrono::nanoseconds(spin),
                                .park = wait_.options().park,
                                .yield = receive_yield_.load(std::memory_order_relaxed)});
    const bool ready = wait.Wait(
        in_.data_waiter(), [&] { return in_.Pending() || Stopped(); }, deadline,
        [&] { CheckPeer(); });
    if (!ready) return Status(err::kNotReady, "deadline");
  }
}

void ShmChannel::SetReceiveSpin(std::chrono::nanoseconds spin, bool yield) {
  receive_yield_.store(yield, std::memory_order_relaxed);
  receive_spin_ns_.store(spin.count() < 0 ? -1 : spin.count(), std::memory_order_relaxed);
}

bool ShmChannel::Arm() {
  // Dekker with the peer's Commit (wait.h): either Pending() sees its frame or its
  // WakeIfParked takes our kWaiterArmed and rings. Liveness needs no handshake: a closed
  // or dead peer leaves the socket readable for good.
  armed_ = shm::WaitStrategy::Arm(in_.data_waiter(), [&] { return in_.Pending() || Stopped(); });
  return armed_;
}

void ShmChannel::Disarm() {
  if (!armed_) return;
  armed_ = false;
  shm::WaitStrategy::Disarm(in_.data_waiter());
  // Drain even when nobody took the arming: a doorbell from an earlier round can arrive
  // late (the peer took a kWaiterArmed, then Arm returned false on its frame).
  DrainDoorbell();
}

void ShmChannel::RingDoorbell() {
  const char bell = 1;
  // EAGAIN: the buffer is full of doorbells, so the socket is readable anyway. EPIPE etc.:
  // the receiver is gone, and its socket end says so.
  [[maybe_unused]] const ssize_t n = ::send(sock_.get(), &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void ShmChannel::DrainDoorbell() {
  char bells[64];
  // Bounded: a peer that floods the socket only gets a spurious wake-up next round.
  for (int i = 0; i < 8; ++i) {
    const ssize_t n = ::recv(sock_.get(), bells, sizeof bells, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    // 0: end of stream, the peer closed or died (after our own Close, shutdown gives 0 too).
    if (n == 0 && !closed_.load(std::memory_order_relaxed)) PeerLost();
    return;  // or EAGAIN: drained
  }
}

void ShmChannel::CheckPeer() {
  if (peer_lost_.load(std::memory_order_relaxed)) return;
  pollfd p{sock_.get(), POLLIN | POLLRDHUP, 0};
  bool lost = false;
  if (::poll(&p, 1, 0) > 0) {
    if (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) {
      lost = true;
    } else if (p.revents & POLLIN) {
      // After the handshake the peer writes only doorbells: readable means EOF or
      // doorbells. Peek, so that a doorbell stays for the epoll sleeper it is meant for.
      char bell;
      lost = ::recv(sock_.get(), &bell, 1, MSG_DONTWAIT | MSG_PEEK) == 0;
    }
  }
  if (lost) PeerLost();
}

void ShmChannel::PeerLost() {
  peer_lost_.store(true, std::memory_order_seq_cst);  // read by Stopped() in ready()
  WakeAll();
}

void ShmChannel::WakeAll() {
  // Our receiver and sender, and the peer's (they park on the other halves of the rings).
  // An armed receiver needs no doorbell here: WakeAll follows a shutdown or a lost peer,
  // and either leaves the socket readable on both ends.
  shm::WaitStrategy::WakeIfParked(in_.data_waiter());
  shm::WaitStrategy::WakeIfParked(out_.space_waiter());
  shm::WaitStrategy::WakeIfParked(out_.data_waiter());
  shm::WaitStrategy::WakeIfParked(in_.space_waiter());
}

void ShmChannel::Close() {
  // seq_cst stores before the wakes: a waiter either sees them in ready() or is woken.
  closed_.store(true, std::memory_order_seq_cst);
  own_state_->store(shm::kSideClosed, std::memory_order_seq_cst);
  ::shutdown(sock_.get(), SHUT_RDWR);
  WakeAll();
}

std::string ShmChannel::Describe() const {
  return "shm uid=" + std::to_string(peer_.uid) + " pid=" + std::to_string(peer_.pid);
}

// ---- ShmListener ----

ShmListener::ShmListener(std::string path, ShmOptions opts, ShmLayout layout, UniqueFd sock,
                         UniqueFd wake, bool owns_path)
    : path_(std::move(path)),
      opts_(opts),
      layout_(layout),
      sock_(std::move(sock)),
      wake_(std::move(wake)),
      owns_path_(owns_path) {}

ShmListener::~ShmListener() {
  if (owns_path_) ::unlink(path_.c_str());
}

Result<int> ShmListener::Bind(const std::string& path) {
  sockaddr_un addr;
  RETURN_IF_ERROR(FillSockaddr(path, addr));
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return Error(err::kInvalidValue, "shm listen " + path + ": exists and is not a socket");
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (probe.valid() &&
        ::connect(probe.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      ucred who{};
      socklen_t len = sizeof who;
      const bool known = ::getsockopt(probe.get(), SOL_SOCKET, SO_PEERCRED, &who, &len) == 0;
      return Error(err::kInitializationError,
                   "shm listen " + path + ": a live server" +
                       (known ? " (pid " + std::to_string(who.pid) + ")" : std::string()) +
                       " accepts there; stop it first, or listen elsewhere");
    }
    ::unlink(path.c_str());  // stale: nobody accepts on it
  }
  UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!sock.valid()) return Error(err::kInitializationError, ErrnoMessage("shm socket", errno));
  if (::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return Error(err::kInitializationError, ErrnoMessage(("shm bind " + path).c_str(), errno));
  if (::listen(sock.get(), SOMAXCONN) != 0)
    return Error(err::kInitializationError, ErrnoMessage("shm listen", errno));
  return sock.release();
}

Result<std::unique_ptr<ShmListener>> ShmListener::Listen(const std::string& path, ShmOptions opts) {
  ASSIGN_OR_RETURN(int fd, Bind(path));
  return Make(path, opts, UniqueFd(fd), /*owns_path=*/true);
}

Result<std::unique_ptr<ShmListener>> ShmListener::Adopt(const std::string& path, int fd,
                                                        ShmOptions opts) {
  UniqueFd sock(fd);
  int listening = 0;
  socklen_t len = sizeof listening;
  if (::getsockopt(sock.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
    return Error(err::kInitializationError, "shm listen " + path + ": descriptor " +
                                                std::to_string(fd) + " is not a listening socket");
  const int flags = ::fcntl(sock.get(), F_GETFL);
  if (flags < 0 || ::fcntl(sock.get(), F_SETFL, flags | O_NONBLOCK) != 0)
    return Error(err::kInitializationError, ErrnoMessage("shm listen fcntl", errno));
  return Make(path, opts, std::move(sock), /*owns_path=*/false);
}

Result<std::unique_ptr<ShmListener>> ShmListener::Make(const std::string& path, ShmOptions opts,
                                                       UniqueFd sock, bool owns_path) {
  ASSIGN_OR_RETURN(ShmLayout layout, ShmLayout::Make(opts.request_ring_bytes, opts.reply_ring_bytes,
                                                     opts.arena_bytes));
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return Error(err::kInitializationError, ErrnoMessage("eventfd", errno));
  return std::unique_ptr<ShmListener>(
      new ShmListener(path, opts, layout, std::move(sock), std::move(wake), owns_path));
}

void ShmListener::Shutdown() {
  shutdown_.store(true, std::memory_order_seq_cst);
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

Result<std::unique_ptr<Channel>> ShmListener::Accept(PeerInfo& peer, Deadline deadline) {
  for (;;) {
    if (shutdown_.load(std::memory_order_seq_cst))
      return Error(err::kDevicesUnavailable, "shm listener shut down");
    pollfd fds[2] = {{sock_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    const int rc = ::poll(fds, 2, PollTimeoutMs(deadline));
    if (rc < 0 && errno != EINTR) return Error(err::kUnknown, ErrnoMessage("shm poll", errno));
    if (rc == 0 && deadline.passed()) return Error(err::kNotReady, "no client before deadline");
    if (rc <= 0 || (fds[1].revents & POLLIN)) continue;  // shutdown_ is checked above
    UniqueFd conn(::accept4(sock_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) {
      if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) continue;
      return Error(err::kUnknown, ErrnoMessage("shm accept", errno));
    }
    PeerInfo who;
    if (!PeerCred(conn.get(), who)) continue;
    who.address = "unix:" + path_;
    ASSIGN_OR_RETURN(std::unique_ptr<Channel> ch, Handshake(std::move(conn), who));
    if (ch == nullptr) continue;  // the client left during the handshake
    peer = std::move(who);
    return ch;
  }
}

Result<std::unique_ptr<Channel>> ShmListener::Handshake(UniqueFd conn, const PeerInfo& peer) {
  const ShmLayout& l = layout_;
  UniqueFd mem(::memfd_create("remora-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!mem.valid()) return Error(err::kMemoryAllocation, ErrnoMessage("memfd_create", errno));
  if (::ftruncate(mem.get(), static_cast<off_t>(l.total_size)) != 0)
    return Error(err::kMemoryAllocation, ErrnoMessage("memfd ftruncate", errno));
  // Sealed size: a client cannot shrink the file under our mapping (SIGBUS in the server).
  if (::fcntl(mem.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return Error(err::kUnknown, ErrnoMessage("memfd seal", errno));
  void* p =
      ::mmap(MapHint(l.total_size), l.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, mem.get(), 0);
  if (p == MAP_FAILED) return Error(err::kMemoryAllocation, ErrnoMessage("memfd mmap", errno));
  Mapping map(p, l.total_size);

  auto* control = new (map.data()) ControlBlock{};
  control->header = l.Header();
  // A new memfd reads as zeros: touching the rings here would cost every
  // session their full size in resident memory before its first frame.
  RETURN_IF_ERROR(SpscRing::Initialize(
      {map.data() + l.request_offset, SpscRing::RegionSize(l.request_capacity)}, l.request_capacity,
      /*zeroed=*/true));
  RETURN_IF_ERROR(SpscRing::Initialize(
      {map.data() + l.reply_offset, SpscRing::RegionSize(l.reply_capacity)}, l.reply_capacity,
      /*zeroed=*/true));

  HandshakeHeader header = l.Header();
  header.server_address = reinterpret_cast<uintptr_t>(map.data());
  iovec iov{&header, sizeof header};
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  const int memfd = mem.get();
  std::memcpy(CMSG_DATA(c), &memfd, sizeof memfd);
  const ssize_t sent = ::sendmsg(conn.get(), &msg, MSG_NOSIGNAL);
  if (sent != static_cast<ssize_t>(sizeof header)) return std::unique_ptr<Channel>();
  return ShmChannelFactory::Make(ShmChannel::Side::kServer, std::move(conn), std::move(map), l,
                                 peer, opts_.wait);
}

// ---- ShmConnect ----

Result<std::unique_ptr<Channel>> ShmConnect(const std::string& path, Deadline deadline,
                                            shm::WaitOptions wait) {
  sockaddr_un addr;
  if (Status s = FillSockaddr(path, addr); !s.ok()) return InitError(path, s.message());
  UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return InitError(path, ErrnoMessage("socket", errno));
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    if (e == ENOENT) return InitError(path, "no Remora server socket at this path");
    if (e == ECONNREFUSED) return InitError(path, "connection refused (is the server running?)");
    return InitError(path, ErrnoMessage("connect", e));
  }

  for (;;) {
    pollfd p{sock.get(), POLLIN, 0};
    const int rc = ::poll(&p, 1, PollTimeoutMs(deadline));
    if (rc > 0) break;
    if (rc < 0 && errno != EINTR) return InitError(path, ErrnoMessage("poll", errno));
    if (rc == 0 && deadline.passed())
      return InitError(path, "the server did not send the session before the deadline");
  }
  HandshakeHeader header{};
  iovec iov{&header, sizeof header};
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 4)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  const ssize_t n = ::recvmsg(sock.get(), &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  UniqueFd mem;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (!mem.valid()) {
        mem = UniqueFd(fd);
      } else {
        ::close(fd);  // extra descriptors: close, the header check below refuses them
        mem.Reset();
      }
    }
  }
  if (n == 0) return InitError(path, "the server closed the connection during the handshake");
  if (n < 0) return InitError(path, ErrnoMessage("recvmsg", errno));
  if (static_cast<size_t>(n) != sizeof header || header.magic != shm::kShmMagic ||
      header.header_size != sizeof header)
    return InitError(path, "the handshake header is not a Remora shm header");
  if (header.version != shm::kLayoutVersion)
    return InitError(path, "shm layout version " + std::to_string(header.version) +
                               ", this client speaks " + std::to_string(shm::kLayoutVersion));
  if ((msg.msg_flags & MSG_CTRUNC) || !mem.valid())
    return InitError(path, "the handshake did not carry exactly one memfd");
  Result<ShmLayout> layout =
      ShmLayout::Make(header.request_capacity, header.reply_capacity, header.arena_size);
  if (!layout.ok()) return InitError(path, "bad layout: " + layout.status().message());
  const ShmLayout l = *layout;
  if (l.total_size != header.total_size)
    return InitError(path, "the header's total size disagrees with its layout");
  struct stat st;
  if (::fstat(mem.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) < l.total_size)
    return InitError(path, "the memfd is smaller than its layout");
  const int seals = ::fcntl(mem.get(), F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK))
    return InitError(path, "the memfd is not sealed against shrinking");
  void* p = MAP_FAILED;
  if (header.server_address != 0 && header.server_address % shm::kPageSize == 0) {
    // Same address as the server when free here; a kernel ignoring the flag
    // (before Linux 4.17) may map elsewhere: then map anywhere, as below.
    void* want = reinterpret_cast<void*>(static_cast<uintptr_t>(header.server_address));
    p = ::mmap(want, l.total_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
               mem.get(), 0);
    if (p != MAP_FAILED && p != want) {
      ::munmap(p, l.total_size);
      p = MAP_FAILED;
    }
  }
  if (p == MAP_FAILED)
    p = ::mmap(nullptr, l.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, mem.get(), 0);
  if (p == MAP_FAILED) return InitError(path, ErrnoMessage("mmap", errno));
  Mapping map(p, l.total_size);
  PeerInfo server;
  if (!PeerCred(sock.get(), server)) return InitError(path, ErrnoMessage("SO_PEERCRED", errno));
  server.address = "unix:" + path;
  Result<std::unique_ptr<Channel>> ch = ShmChannelFactory::Make(
      ShmChannel::Side::kClient, std::move(sock), std::move(map), l, server, wait);
  if (!ch.ok()) return InitError(path, ch.status().message());
  return ch;
}

}  // namespace remora::transport
