// Where in the user's code each equation came from. A public call records its caller's
// std::source_location (its ArrayLike operands capture it; functions taking arrays by
// reference take it as a defaulted last argument), the innermost such call outside
// parax's own code winning for as long as the call runs; the staging interpreter stores it
// on each equation it records, and the interpreters that replay a program (autodiff,
// batching) pass each equation's on to the equations they make from it. The compiler
// copies it onto the collectives it inserts, which is how the explainer names a line.
#pragma once

#include <source_location>
#include <string>

namespace parax::core {

// The call site that equations bound now belong to (empty outside any public call).
const std::source_location& current_site();

// True for a site with no location (file name empty).
inline bool empty_site(const std::source_location& s) { return s.file_name()[0] == '\0'; }

// Returns `file:line`, the file relative to the project's root when under it.
std::string site_str(const std::source_location& s);

// Makes `site` the current one for the scope, restoring the previous one after: an
// interpreter replaying an equation binds the equations it makes from it under its site.
class SiteScope {
 public:
  explicit SiteScope(const std::source_location& site);
  ~SiteScope();
  SiteScope(const SiteScope&) = delete;
  SiteScope& operator=(const SiteScope&) = delete;

 private:
  std::source_location saved_;
};

// Records a public call's site for the scope, as an ArrayLike operand does (unless the call
// is parax's own): for functions taking arrays by reference.
class UserCallScope {
 public:
  explicit UserCallScope(const std::source_location& site);
  ~UserCallScope();
  UserCallScope(const UserCallScope&) = delete;
  UserCallScope& operator=(const UserCallScope&) = delete;

 private:
  std::source_location prev_;
  bool owns_;
};

}  // namespace parax::core
