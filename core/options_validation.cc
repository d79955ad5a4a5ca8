#include "core/options_validation.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace cairn {

// Every Options field with a limit is checked here (a comparison written as
// !(in range) also rejects NaN). The rest take any value: the booleans,
// cache_size, block_cache_size, value_cache_size (0: no cache, or no cache
// of its own), gc_bytes_per_sec (0 turns it off), value_separation_threshold
// (0 separates every value) and the pending-compaction limits (only their
// order matters, and 0 turns one off). Listeners must not be null.
absl::Status ValidateOptions(const Options& o) {
  if (o.memtable_size < (64 << 10) || o.memtable_size > (size_t{4} << 30)) {
    return absl::InvalidArgumentError("Options::memtable_size must be in [64 KiB, 4 GiB]");
  }
  if (o.block_size < 256 || o.block_size > (16 << 20)) {
    return absl::InvalidArgumentError("Options::block_size must be in [256 B, 16 MiB]");
  }
  if (o.bloom_bits_per_key < 0 || o.bloom_bits_per_key > 64) {
    return absl::InvalidArgumentError("Options::bloom_bits_per_key must be in [0, 64]");
  }
  if (o.compression != Compression::kNone && o.compression != Compression::kZstd) {
    return absl::InvalidArgumentError("Options::compression is not a Compression value");
  }
  if (o.value_compression != Compression::kNone && o.value_compression != Compression::kZstd) {
    return absl::InvalidArgumentError("Options::value_compression is not a Compression value");
  }
  if (o.io_backend != IoBackendOption::kAuto && o.io_backend != IoBackendOption::kUring &&
      o.io_backend != IoBackendOption::kPosix) {
    return absl::InvalidArgumentError("Options::io_backend is not an IoBackendOption value");
  }
  if (o.wal_prefill_bytes % 4096 != 0 || o.wal_prefill_bytes > (uint64_t{64} << 20)) {
    return absl::InvalidArgumentError(
        "Options::wal_prefill_bytes must be a multiple of 4 KiB, at most 64 MiB (0: off)");
  }
  // Ages are compared as signed seconds (core/db_updates.cc).
  if (o.wal_ttl_seconds > kMaxWalTtlSeconds) {
    return absl::InvalidArgumentError(
        "Options::wal_ttl_seconds must be at most 100 years (3155760000; 0: no age limit)");
  }
  if (o.separate_at_flush_below > (size_t{1} << 20)) {
    return absl::InvalidArgumentError("Options::separate_at_flush_below must be at most 1 MiB");
  }
  if (o.level0_compaction_trigger < 1 ||
      o.level0_slowdown_trigger < o.level0_compaction_trigger ||
      o.level0_stop_trigger < o.level0_slowdown_trigger) {
    return absl::InvalidArgumentError(
        "Options: need 1 <= level0_compaction_trigger <= level0_slowdown_trigger <= "
        "level0_stop_trigger");
  }
  if (o.level_size_multiplier < 2 || o.level_size_multiplier > 1000) {
    return absl::InvalidArgumentError("Options::level_size_multiplier must be in [2, 1000]");
  }
  if (o.target_file_size < (64 << 10) || o.target_file_size > (size_t{4} << 30)) {
    return absl::InvalidArgumentError("Options::target_file_size must be in [64 KiB, 4 GiB]");
  }
  if (o.hard_pending_compaction_bytes_limit != 0 &&
      o.soft_pending_compaction_bytes_limit > o.hard_pending_compaction_bytes_limit) {
    return absl::InvalidArgumentError(
        "Options: soft_pending_compaction_bytes_limit exceeds the hard limit");
  }
  if (!(o.gc_min_garbage_ratio >= 0 && o.gc_min_garbage_ratio <= 1)) {
    return absl::InvalidArgumentError("Options::gc_min_garbage_ratio must be in [0, 1]");
  }
  if (!(o.gc_space_amp_trigger == 0 ||
        (o.gc_space_amp_trigger > 1 && std::isfinite(o.gc_space_amp_trigger)))) {
    return absl::InvalidArgumentError(
        "Options::gc_space_amp_trigger must be finite and above 1 (or 0 to disable background "
        "GC)");
  }
  if (o.max_background_gc < 1 || o.max_background_gc > 16) {
    return absl::InvalidArgumentError("Options::max_background_gc must be in [1, 16]");
  }
  if (o.gc_nice_adjustment < -20 || o.gc_nice_adjustment > 19) {
    return absl::InvalidArgumentError("Options::gc_nice_adjustment must be in [-20, 19]");
  }
  if (o.max_background_compactions < 1 || o.max_background_compactions > 64) {
    return absl::InvalidArgumentError("Options::max_background_compactions must be in [1, 64]");
  }
  if (o.max_subcompactions < 1 || o.max_subcompactions > 64) {
    return absl::InvalidArgumentError("Options::max_subcompactions must be in [1, 64]");
  }
  if (o.compaction_readahead_size > kMaxReadaheadSize) {
    return absl::InvalidArgumentError("Options::compaction_readahead_size must be at most 64 MiB");
  }
  if (o.max_memtable_value_bytes < (64 << 10)) {
    return absl::InvalidArgumentError("Options::max_memtable_value_bytes must be at least 64 KiB");
  }
  if (o.value_log_segment_size < (64 << 10) || o.value_log_segment_size > (uint64_t{4} << 30)) {
    return absl::InvalidArgumentError(
        "Options::value_log_segment_size must be in [64 KiB, 4 GiB]");
  }
  if (o.default_ttl_seconds > kMaxTtlSeconds) {
    return absl::InvalidArgumentError(absl::StrCat("Options::default_ttl_seconds of ",
                                                   o.default_ttl_seconds,
                                                   " exceeds kMaxTtlSeconds (", kMaxTtlSeconds,
                                                   ")"));
  }
  for (size_t i = 0; i < o.listeners.size(); ++i) {
    if (o.listeners[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("Options::listeners[", i, "] is null"));
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn
