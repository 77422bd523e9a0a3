// GoogleTest's gtest_main provides main(); libsystemc's own main is not used by the tests, but
// the shared library still references sc_main, so every test executable links this definition.
extern "C" int sc_main(int, char*[]) { return 0; }
