// client_stub/no_destructor.h - NoDestructor<T>: a static object that is never destroyed.
//
// The stub's globals must outlive every static destructor and atexit handler of
// the application, which may still call CUDA while the process unwinds.
#pragma once

#include <new>
#include <utility>

namespace remora::client_stub {

template <class T>
class NoDestructor {
 public:
  template <class... Args>
  explicit NoDestructor(Args&&... args) {
    new (storage_) T(std::forward<Args>(args)...);
  }
  NoDestructor(const NoDestructor&) = delete;
  NoDestructor& operator=(const NoDestructor&) = delete;

  T* get() { return std::launder(reinterpret_cast<T*>(storage_)); }
  T& operator*() { return *get(); }
  T* operator->() { return get(); }

 private:
  alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace remora::client_stub

namespace remora::client_stub {

// The calling thread's T, usable for the whole life of the thread: exit handlers (NVIDIA's
// runtime's among them) and static destructors still call CUDA after the exiting thread's
// thread_local objects were destroyed. From then on the thread gets a new T that is never
// destroyed. Each Tag names one such object.
template <class T, class Tag>
T& ThreadScratch() {
  struct Slot {
    T value{};
    bool alive = true;
    ~Slot() { alive = false; }
  };
  thread_local Slot slot;
  // Reading `alive` after ~Slot relies on thread storage outliving its objects, as it does.
  if (slot.alive) [[likely]]
    return slot.value;
  thread_local NoDestructor<T> late;  // built here, on the thread's first use after ~Slot
  return *late;
}

}  // namespace remora::client_stub
