// What the training examples share: reading JAX's loss curve from a golden file, printing
// a curve, and comparing two within a relative tolerance.
#pragma once

#include <cmath>
#include <cstddef>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace loss_curves {

// Returns the losses on the line of `file` (under tests/golden/) that starts with `name`.
inline std::vector<float> jax(const std::string& file, const std::string& name) {
  std::ifstream in(std::string(PARAX_GOLDEN_DIR) + "/" + file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string key;
    s >> key;
    if (key != name) continue;
    std::vector<float> out;
    for (double v; s >> v;) out.push_back(float(v));
    return out;
  }
  return {};
}

// Prints `what`, padded to `width`, then the losses to 4 decimals.
inline void print(const std::string& what, const std::vector<float>& losses, int width) {
  std::cout << std::left << std::setw(width) << what << std::fixed << std::setprecision(4);
  for (float l : losses) std::cout << " " << l;
  std::cout << "\n";
}

// True if the curves have one length and agree within `rtol` of b's values.
inline bool close(const std::vector<float>& a, const std::vector<float>& b, float rtol) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::abs(a[i] - b[i]) > rtol * std::abs(b[i])) return false;
  }
  return true;
}

}  // namespace loss_curves
