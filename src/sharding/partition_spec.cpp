#include "parax/sharding.h"

namespace parax {

const SpecEntry PartitionSpec::UNCONSTRAINED = SpecEntry::unconstrained();

SpecEntry SpecEntry::unconstrained() {
  SpecEntry e{None};
  e.unconstrained_ = true;
  return e;
}

std::string SpecEntry::to_string() const {
  if (unconstrained_) return "UNCONSTRAINED";
  if (axes_.empty()) return grouped_ ? "()" : "None";
  if (!grouped_) return "'" + axes_[0] + "'";
  std::string s = "(";
  for (size_t i = 0; i < axes_.size(); ++i) s += (i ? ", '" : "'") + axes_[i] + "'";
  return s + (axes_.size() == 1 ? ",)" : ")");
}

PartitionSpec::PartitionSpec(SpecEntry e0, SpecEntry e1, SpecEntry e2, SpecEntry e3, SpecEntry e4,
                             SpecEntry e5, SpecEntry e6, SpecEntry e7) {
  for (SpecEntry* e : {&e0, &e1, &e2, &e3, &e4, &e5, &e6, &e7}) {
    if (e->absent()) break;
    entries_.push_back(std::move(*e));
  }
}

PartitionSpec::PartitionSpec(std::initializer_list<std::string> grouped_axes)
    : entries_{SpecEntry(grouped_axes)} {}

PartitionSpec PartitionSpec::from_entries(std::vector<SpecEntry> entries) {
  PartitionSpec p;
  for (SpecEntry& e : entries) {
    if (!e.absent()) p.entries_.push_back(std::move(e));
  }
  return p;
}

namespace {
std::string entries_text(const std::vector<SpecEntry>& entries) {
  std::string s;
  for (size_t i = 0; i < entries.size(); ++i) s += (i ? ", " : "") + entries[i].to_string();
  return s + (entries.size() == 1 ? "," : "");
}
}  // namespace

std::string PartitionSpec::to_string() const {
  return "PartitionSpec(" + entries_text(entries_) + ")";
}

std::string PartitionSpec::to_ir_string() const { return "P(" + entries_text(entries_) + ")"; }

std::ostream& operator<<(std::ostream& os, const PartitionSpec& p) { return os << p.to_string(); }

}  // namespace parax
