// A least-recently-used map with hit/miss/eviction counters: the shape of every compile
// cache (eager executables, jit traces, jit executables), so each stays within a configured
// number of entries however many distinct shapes a long run sees. Not thread-safe: callers
// hold their own lock.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <utility>

namespace parax::detail {

// What a cache has done since the process started (size and capacity: now).
struct CacheCounters {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t evictions = 0;
  int64_t size = 0;
  int64_t capacity = 0;
};

template <class K, class V>
class LruCache {
 public:
  explicit LruCache(int64_t capacity) : capacity_(capacity) {}

  // Returns the value for `key` (now the most recent), or nullptr; counts a hit or a miss.
  V* find(const K& key) {
    auto it = index_.find(key);
    if (it == index_.end()) {
      ++misses_;
      return nullptr;
    }
    ++hits_;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }

  // Inserts or replaces `key`, then evicts the least recently used entries beyond the
  // capacity (0: keeps nothing).
  void put(const K& key, V value) {
    if (auto it = index_.find(key); it != index_.end()) {
      it->second->second = std::move(value);
      order_.splice(order_.begin(), order_, it->second);
    } else {
      order_.emplace_front(key, std::move(value));
      index_.emplace(key, order_.begin());
    }
    trim();
  }

  // Changes the capacity, evicting what no longer fits.
  void set_capacity(int64_t capacity) {
    capacity_ = capacity;
    trim();
  }

  // Removes every entry for which pred(key, value) holds (not counted as evictions).
  template <class Pred>
  void erase_if(Pred pred) {
    for (auto it = order_.begin(); it != order_.end();) {
      if (pred(it->first, it->second)) {
        index_.erase(it->first);
        it = order_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void clear() {
    index_.clear();
    order_.clear();
  }

  int64_t size() const { return int64_t(order_.size()); }

  CacheCounters counters() const { return {hits_, misses_, evictions_, size(), capacity_}; }

 private:
  void trim() {
    while (int64_t(order_.size()) > capacity_ && !order_.empty()) {
      index_.erase(order_.back().first);
      order_.pop_back();
      ++evictions_;
    }
  }

  int64_t capacity_;
  std::list<std::pair<K, V>> order_;  // most recently used first
  std::unordered_map<K, typename std::list<std::pair<K, V>>::iterator> index_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
  int64_t evictions_ = 0;
};

}  // namespace parax::detail
