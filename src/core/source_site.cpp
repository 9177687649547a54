#include "core/source_site.h"

#include <cstring>
#include <string_view>

#include "parax/array.h"

namespace parax {
namespace {

// The innermost user-written public call on this thread.
thread_local std::source_location t_site{};

// The project's root as this build names its files (absolute, or relative under a
// ccache base directory): this file's name less its own path.
std::string_view project_root() {
  static const std::string_view root = [] {
    std::string_view self = __FILE__;
    constexpr std::string_view kSelf = "src/core/source_site.cpp";
    return self.ends_with(kSelf) ? self.substr(0, self.size() - kSelf.size()) : std::string_view();
  }();
  return root;
}

// A file's name relative to the project's root when under it; a relative name (a build
// whose compiler saw paths relative to its build directory, as under a ccache base
// directory) loses its leading ../ and ./ instead.
std::string_view relative_name(std::string_view f) {
  const std::string_view root = project_root();
  if (!root.empty() && f.starts_with(root) && root.front() == '/') return f.substr(root.size());
  for (;;) {
    if (f.starts_with("./")) {
      f.remove_prefix(2);
    } else if (f.starts_with("../")) {
      f.remove_prefix(3);
    } else {
      return f;
    }
  }
}

// parax's own sources and headers call its public functions too; those calls are not
// the user's, and the site stays the caller's (or none). Nor is a conversion the standard
// library makes (an ArrayLike built inside std::optional<ArrayLike>).
bool not_users(const char* file) {
  const std::string_view f = file;
  if (f.find("/include/c++/") != std::string_view::npos) return true;
  if (f.find("include/parax/") != std::string_view::npos) return true;  // wherever installed
  if (f.starts_with("/") && !f.starts_with(project_root())) return false;
  return relative_name(f).starts_with("src/");
}

}  // namespace

namespace detail {

bool enter_call_site(const std::source_location& site, std::source_location& prev) {
  // Most calls come from a few files: remember the last verdict.
  thread_local const char* last_file = nullptr;
  thread_local bool last_not_users = false;
  if (site.file_name() != last_file) {
    last_file = site.file_name();
    last_not_users = not_users(last_file);
  }
  if (last_not_users) return false;
  prev = t_site;
  t_site = site;
  return true;
}

void leave_call_site(const std::source_location& prev) { t_site = prev; }

}  // namespace detail

namespace core {

const std::source_location& current_site() { return t_site; }

std::string site_str(const std::source_location& s) {
  if (empty_site(s)) return "";
  return std::string(relative_name(s.file_name())) + ":" + std::to_string(s.line());
}

SiteScope::SiteScope(const std::source_location& site) : saved_(t_site) { t_site = site; }

SiteScope::~SiteScope() { t_site = saved_; }

UserCallScope::UserCallScope(const std::source_location& site)
    : owns_(detail::enter_call_site(site, prev_)) {}

UserCallScope::~UserCallScope() {
  if (owns_) detail::leave_call_site(prev_);
}

}  // namespace core
}  // namespace parax
