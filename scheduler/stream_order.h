// scheduler/stream_order.h - one tenant's streams as CUDA orders their work, as pure logic.
//
// Each stream is a queue of items, numbered from 1 in submission order. An item may be handed
// to the device (issued) once everything CUDA orders before it has been issued: its stream's
// earlier items; for the legacy default stream (id 0) what was submitted before it on every
// blocking stream, and for a blocking stream what was submitted before it on the legacy one;
// for an event wait, the latest record of the event submitted before it. A host function at
// the head holds its stream until the tenant answers (Hold, Release). The device must see
// the legacy ordering too, since items of tied streams run on different device streams:
// OrderOnDevice says which streams a head must wait for there.
//
// No CUDA, no clocks, no locks: the executor owns one per tenant and guards it with its lock;
// the payload is whatever it issues (tests use ints). Stream ids are the tenant's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduler/ring_queue.h"

namespace remora::sched {

// CUDA's legacy default stream (id 0) and every blocking stream order after each other: work
// on one waits for what was submitted before on the other. Non-blocking streams and two
// blocking streams are not tied.
inline bool LegacyTied(uint64_t a, bool a_blocking, uint64_t b, bool b_blocking) {
  return a != b && ((a == 0 && b_blocking) || (b == 0 && a_blocking));
}

template <class Payload, class Event = uint64_t>
class StreamOrder {
 public:
  struct Item {
    uint64_t index = 0;                                // from 1, in its stream
    std::vector<std::pair<uint64_t, uint64_t>> after;  // (stream, index) issued first
    Payload payload;
  };

  // A new stream `id` (0: the legacy default stream); `blocking`: tied to the legacy stream.
  void Add(uint64_t id, bool blocking) {
    Stream& s = streams_[id];
    s = Stream{};
    s.blocking = blocking;
  }
  // True if `id` was added and not removed (the owner refuses a tenant's new work on it).
  bool Has(uint64_t id) const {
    auto it = streams_.find(id);
    return it != streams_.end() && !it->second.removed;
  }
  // Marks `id` as going: Has() is false; what is queued stays and may be issued, and the owner
  // may still queue its own items (a wait for the stream to drain).
  void Remove(uint64_t id) {
    if (auto it = streams_.find(id); it != streams_.end()) it->second.removed = true;
  }
  // Forgets `id` with its queue and every other stream's device order after it.
  void Erase(uint64_t id) {
    if (auto it = streams_.find(id); it != streams_.end()) queued_ -= it->second.queue.size();
    streams_.erase(id);
    for (auto& [other, s] : streams_) s.seen.erase(id);
  }
  // Forgets every stream and event.
  void Clear() {
    streams_.clear();
    events_.clear();
    queued_ = 0;
  }

  // Appends `payload` to `id`'s queue, after what CUDA orders before it (see the head);
  // `waits` names an event the item waits for. Returns the item's index; nullopt for an unknown
  // stream.
  std::optional<uint64_t> Push(uint64_t id, Payload payload,
                               std::optional<Event> waits = std::nullopt) {
    auto it = streams_.find(id);
    if (it == streams_.end()) return std::nullopt;
    Stream& st = it->second;
    Item item;
    item.payload = std::move(payload);
    for (auto& [oid, other] : streams_) {
      if (!other.removed && LegacyTied(id, st.blocking, oid, other.blocking) &&
          other.submitted > other.issued)
        item.after.emplace_back(oid, other.submitted);
    }
    if (waits) {
      if (std::optional<std::pair<uint64_t, uint64_t>> r = PendingRecord(*waits))
        item.after.push_back(*r);
    }
    item.index = ++st.submitted;
    st.queue.push_back(std::move(item));
    ++queued_;
    return st.submitted;
  }
  // Notes that item `index` of `stream` records `e` (its latest record from now on).
  void Recorded(Event e, uint64_t stream, uint64_t index) { events_[e] = {stream, index}; }
  void ForgetEvent(Event e) { events_.erase(e); }
  // (stream, index) of `e`'s latest record while that record is not issued yet.
  std::optional<std::pair<uint64_t, uint64_t>> PendingRecord(Event e) const {
    auto ev = events_.find(e);
    if (ev == events_.end()) return std::nullopt;
    auto rs = streams_.find(ev->second.first);
    if (rs == streams_.end() || rs->second.issued >= ev->second.second) return std::nullopt;
    return ev->second;
  }
  // The queued item `index` of `stream`, if it is still queued. Constant time: a queue holds
  // consecutive indices.
  Item* Find(uint64_t stream, uint64_t index) {
    auto it = streams_.find(stream);
    if (it == streams_.end() || it->second.queue.empty()) return nullptr;
    RingQueue<Item>& q = it->second.queue;
    const uint64_t first = q.front().index;
    if (index < first || index - first >= q.size()) return nullptr;
    return &q[index - first];
  }

  // True if `id`'s head may be issued now: there is one, it is not held, and everything it
  // follows has been issued (a stream erased meanwhile no longer holds it).
  bool HeadReady(uint64_t id) const {
    auto it = streams_.find(id);
    return it != streams_.end() && HeadReady(it->second);
  }
  bool AnyReady() const {
    for (const auto& [id, s] : streams_)
      if (HeadReady(s)) return true;
    return false;
  }
  // A stream whose head is ready, taking streams in turn so a busy one cannot starve others.
  std::optional<uint64_t> NextReady() {
    const size_t n = streams_.size();
    if (n == 0) return std::nullopt;
    auto it = streams_.begin();
    std::advance(it, next_hint_ % n);
    for (size_t k = 0; k < n; ++k, ++it) {
      if (it == streams_.end()) it = streams_.begin();
      if (!HeadReady(it->second)) continue;
      next_hint_ = (next_hint_ + k + 1) % n;
      return it->first;
    }
    return std::nullopt;
  }
  // REQUIRES: `id`'s queue is not empty.
  Item& Head(uint64_t id) { return streams_.at(id).queue.front(); }
  // The head of `id` went to the device: it is issued and leaves the queue.
  void Issued(uint64_t id) {
    Stream& s = streams_.at(id);
    s.issued = s.queue.front().index;
    s.queue.pop_front();
    --queued_;
  }
  // The head of `id` (a host function) waits for the tenant: nothing behind it is ready.
  void Hold(uint64_t id, uint64_t hold) {
    Stream& s = streams_.at(id);
    s.held = true;
    s.hold = hold;
  }
  // The tenant answered host function `hold`: it is issued. Returns its stream, if held.
  std::optional<uint64_t> Release(uint64_t hold) {
    for (auto& [id, s] : streams_) {
      if (!s.held || s.hold != hold) continue;
      s.held = false;
      Issued(id);
      return id;
    }
    return std::nullopt;
  }

  // The device side of the legacy ordering, before `id`'s head is issued: calls
  // `wait(other)` for each stream tied to `id` whose issued work `id` is not yet ordered
  // after there, and remembers it once `wait` succeeds. `wait` returns something testable
  // as ok() (a Status); the first failure is returned and not remembered.
  template <class Wait>
  auto OrderOnDevice(uint64_t id, Wait&& wait) -> decltype(wait(uint64_t{})) {
    Stream& st = streams_.at(id);
    for (auto& [oid, other] : streams_) {
      if (!LegacyTied(id, st.blocking, oid, other.blocking)) continue;
      auto [seen, fresh] = st.seen.try_emplace(oid, 0);
      if (other.issued <= seen->second) continue;
      auto r = wait(oid);
      if (!r.ok()) return r;
      seen->second = other.issued;
    }
    return decltype(wait(uint64_t{})){};
  }

  // Drops `id`'s queue, oldest first, passing each item to `drop`; the stream counts as
  // having issued everything submitted.
  template <class Drop>
  void Drain(uint64_t id, Drop&& drop) {
    Stream& s = streams_.at(id);
    for (Item& item : s.queue) drop(item);
    queued_ -= s.queue.size();
    s.queue.clear();
    s.held = false;
    s.issued = s.submitted;
  }

  bool Empty(uint64_t id) const { return streams_.at(id).queue.empty(); }
  // Items queued in every stream (held host functions included).
  size_t queued() const { return queued_; }
  uint64_t submitted(uint64_t id) const { return streams_.at(id).submitted; }
  uint64_t issued(uint64_t id) const { return streams_.at(id).issued; }
  // Every stream's id, removed ones included.
  std::vector<uint64_t> Ids() const {
    std::vector<uint64_t> ids;
    ids.reserve(streams_.size());
    for (const auto& [id, s] : streams_) ids.push_back(id);
    return ids;
  }

 private:
  struct Stream {
    bool blocking = true;
    bool removed = false;
    bool held = false;
    uint64_t hold = 0;
    uint64_t submitted = 0;
    uint64_t issued = 0;  // index of the last item issued (a host function: answered)
    RingQueue<Item> queue;
    std::map<uint64_t, uint64_t> seen;  // tied stream -> its `issued` this one follows on device
  };
  bool HeadReady(const Stream& s) const {
    if (s.held || s.queue.empty()) return false;
    for (const auto& [sid, index] : s.queue.front().after) {
      auto it = streams_.find(sid);
      if (it != streams_.end() && it->second.issued < index) return false;
    }
    return true;
  }

  std::map<uint64_t, Stream> streams_;
  std::unordered_map<Event, std::pair<uint64_t, uint64_t>> events_;
  size_t next_hint_ = 0;
  size_t queued_ = 0;
};

}  // namespace remora::sched
