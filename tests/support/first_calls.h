// Public entry points that can be the very first parax call of a program, each checking its
// result against plain C++. tests/runtime/backend_install_test.cpp runs every one as the first
// statement of its own process; the fuzz test runs randomly drawn ones (with drawn shapes and
// meshes) the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace parax::testing {

// How a first call ended: the exit code of the child process that made it.
enum FirstCallOutcome : int {
  kValue = 0,       // the result matched what plain C++ computes
  kParaxError = 1,  // it raised a parax::Error (its text on stderr)
  kWrongValue = 2,  // it returned something else
  kOtherThrow = 3,  // it threw something that is not a parax::Error
};

struct FirstCall {
  std::string name;
  // Makes the call, drawing its sizes from `rng`; returns whether the result is right.
  std::function<bool(std::mt19937_64& rng)> run;
  // What JAX does for the same call: a value, or an error (pmap of no arguments).
  FirstCallOutcome expected = kValue;
};

// Returns every entry point, in a fixed order (names are unique).
const std::vector<FirstCall>& first_calls();
// Returns the entry point named `name`; throws std::out_of_range for an unknown one.
const FirstCall& first_call(const std::string& name);
// Runs `call` with a generator seeded by `seed`, reporting a parax::Error's or another
// exception's text on stderr; returns how it ended.
FirstCallOutcome run_first_call(const FirstCall& call, uint64_t seed);

}  // namespace parax::testing
