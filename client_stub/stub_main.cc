// client_stub/stub_main.cc - anchor source of the shared libcudart.so.13 (code is in
// remora_cudart_core).
