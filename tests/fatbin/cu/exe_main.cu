// tests/fatbin/cu/exe_main.cu - host main linked with saxpy.cu into a whole executable.
int main() { return 0; }
