#include "gc/obsolete_segments.h"

#include <utility>

namespace cairn::gc {

void ObsoleteSegments::Add(uint64_t segment_id, uint64_t sequence, uint64_t log_number,
                           std::weak_ptr<const void> epoch) {
  segments_.push_back({segment_id, sequence, log_number, std::move(epoch)});
}

ObsoleteSegments::Ready ObsoleteSegments::TakeDeletable(uint64_t oldest_snapshot,
                                                        uint64_t replayed_from) {
  Ready ready;
  for (auto it = segments_.begin(); it != segments_.end();) {
    const bool unreachable = it->epoch.expired() && oldest_snapshot >= it->sequence;
    const bool wal_done = it->log_number < replayed_from;
    if (unreachable && wal_done) {
      ready.deletable.push_back(it->id);
      it = segments_.erase(it);
    } else {
      if (unreachable) ++ready.waiting_for_wal;
      ++it;
    }
  }
  return ready;
}

}  // namespace cairn::gc
