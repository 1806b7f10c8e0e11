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
