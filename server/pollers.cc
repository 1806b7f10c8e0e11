// server/pollers.cc - epoll over armed sessions, served by a fixed pool.
#include "server/pollers.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "server/log.h"
#include "server/session.h"

namespace remora::server {

Result<std::unique_ptr<PollerPool>> PollerPool::Start(size_t threads) {
  std::unique_ptr<PollerPool> p(new PollerPool());
  p->epoll_ = epoll_create1(EPOLL_CLOEXEC);
  p->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (p->epoll_ < 0 || p->stop_fd_ < 0)
    return Error(err::kInitializationError, std::string("epoll: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered: every thread sees it and leaves
  ev.data.ptr = nullptr;
  if (epoll_ctl(p->epoll_, EPOLL_CTL_ADD, p->stop_fd_, &ev) != 0)
    return Error(err::kInitializationError, std::string("epoll_ctl: ") + std::strerror(errno));
  for (size_t i = 0; i < threads; ++i) p->threads_.emplace_back([raw = p.get()] { raw->Loop(); });
  return p;
}

PollerPool::~PollerPool() {
  {
    std::unique_lock lock(mu_);
    empty_cv_.wait(lock, [&] { return entries_.empty(); });
  }
  if (stop_fd_ >= 0) {
    uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof one);
  }
  for (auto& t : threads_) t.join();
  if (epoll_ >= 0) close(epoll_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

Status PollerPool::Add(std::shared_ptr<Session> s) {
  auto e = std::make_unique<Entry>();
  e->fd = s->wake_fd();
  e->session = std::move(s);
  Entry* raw = e.get();
  {
    std::lock_guard lock(mu_);
    entries_[raw] = std::move(e);
  }
  // A first look, here: it arms the channel (or finds the Hello already sent).
  if (!Serve(raw, /*rearm=*/false)) {
    std::lock_guard lock(mu_);
    entries_.erase(raw);
    return OkStatus();
  }
  // EPOLLONESHOT: one thread at a time per session; Rearm after each turn.
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.ptr = raw;
  if (epoll_ctl(epoll_, EPOLL_CTL_ADD, raw->fd, &ev) != 0) {
    Status st = Error(err::kUnknown, std::string("epoll_ctl: ") + std::strerror(errno));
    raw->session->Stop();
    while (Serve(raw, /*rearm=*/false)) {
    }
    std::lock_guard lock(mu_);
    entries_.erase(raw);
    return st;
  }
  return OkStatus();
}

bool PollerPool::Serve(Entry* e, bool rearm) {
  std::lock_guard lock(e->serving);
  for (;;) {
    if (!e->session->ServeReady()) return false;
    if (!rearm || Rearm(e)) return true;
    e->session->Stop();  // it cannot be woken again: end it
  }
}

size_t PollerPool::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

bool PollerPool::Rearm(Entry* e) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.ptr = e;
  if (epoll_ctl(epoll_, EPOLL_CTL_MOD, e->fd, &ev) == 0) return true;
  Log(Level::kError, "pollers", {{"event", "rearm_failed"}, {"error", std::strerror(errno)}});
  return false;
}

void PollerPool::Forget(Entry* e) {
  (void)epoll_ctl(epoll_, EPOLL_CTL_DEL, e->fd, nullptr);
  std::unique_ptr<Entry> gone;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(e);
    if (it != entries_.end()) {
      gone = std::move(it->second);
      entries_.erase(it);
    }
    if (entries_.empty()) empty_cv_.notify_all();
  }
}

void PollerPool::Loop() {
  pthread_setname_np(pthread_self(), "remora-poller");
  for (;;) {
    epoll_event ev{};
    int n = epoll_wait(epoll_, &ev, 1, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      Log(Level::kError, "pollers", {{"event", "epoll_failed"}, {"error", std::strerror(errno)}});
      return;
    }
    if (n == 0) continue;
    if (ev.data.ptr == nullptr) return;  // the pool stops
    auto* e = static_cast<Entry*>(ev.data.ptr);
    if (!Serve(e, /*rearm=*/true)) Forget(e);
  }
}

}  // namespace remora::server
