// scheduler/ring_queue.h - a FIFO queue on a ring of slots that keeps its capacity.
//
// Pushing and popping allocate nothing once the ring has grown to the queue's longest length
// (std::deque allocates a block every few items of a large type): the executor's stream queues
// see a push and a pop per launch. A popped slot is reset to T{}, so what an item held goes at
// once. Not thread-safe.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace remora::sched {

template <class T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // REQUIRES: i < size(); 0 is the front.
  T& operator[](size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
  const T& operator[](size_t i) const { return slots_[(head_ + i) & (slots_.size() - 1)]; }
  // REQUIRES: !empty().
  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }

  void push_back(T v) {
    if (size_ == slots_.size()) Grow();
    slots_[(head_ + size_) & (slots_.size() - 1)] = std::move(v);
    ++size_;
  }
  // REQUIRES: !empty().
  void pop_front() {
    slots_[head_] = T();
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
  }
  void clear() {
    while (!empty()) pop_front();
  }

  // Front to back.
  template <class Q, class V>
  class Iter {
   public:
    Iter(Q* q, size_t i) : q_(q), i_(i) {}
    V& operator*() const { return (*q_)[i_]; }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iter& o) const { return i_ == o.i_; }

   private:
    Q* q_;
    size_t i_;
  };
  Iter<RingQueue, T> begin() { return {this, 0}; }
  Iter<RingQueue, T> end() { return {this, size_}; }
  Iter<const RingQueue, const T> begin() const { return {this, 0}; }
  Iter<const RingQueue, const T> end() const { return {this, size_}; }

 private:
  // Doubles the ring (a power of two, so an index wraps with a mask), front at slot 0.
  void Grow() {
    std::vector<T> bigger(slots_.empty() ? 4 : slots_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    slots_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace remora::sched
