/* A shared library without specdec_plugin_entry, for the loader's "missing symbol" test. */
int specdec_test_not_a_plugin(void) { return 42; }
