#include "gc/obsolete_segments.h"

#include <utility>

namespace cairn::gc {

void ObsoleteSegments::Add(Victim victim) { segments_.push_back(std::move(victim)); }

ObsoleteSegments::Ready ObsoleteSegments::TakeDeletable(uint64_t oldest_snapshot,
                                                        uint64_t synced_sequence,
                                                        uint64_t replayed_from) {
  Ready ready;
  for (auto it = segments_.begin(); it != segments_.end();) {
    const bool unreachable = it->epoch.expired() && oldest_snapshot >= it->sequence;
    const bool durable = it->durable_at <= synced_sequence || it->log_number < replayed_from;
    if (unreachable && durable) {
      ready.deletable.push_back(it->segment_id);
      it = segments_.erase(it);
    } else {
      if (unreachable) ++ready.waiting_for_wal;
      ++it;
    }
  }
  return ready;
}

}  // namespace cairn::gc
