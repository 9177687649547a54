// Issue 11 regression tests: see the file's tests below.
#include <gtest/gtest.h>
