#include "gc/obsolete_segments.h"

#include <utility>

namespace cairn::gc {

void ObsoleteSegments::Add(Victim victim) { segments_.push_back(std::move(victim)); }

std::vector<uint64_t> ObsoleteSegments::TakeDeletable(uint64_t oldest_snapshot) {
  std::vector<uint64_t> deletable;
  for (auto it = segments_.begin(); it != segments_.end();) {
    if (it->epoch.expired() && oldest_snapshot >= it->sequence) {
      deletable.push_back(it->segment_id);
      it = segments_.erase(it);
    } else {
      ++it;
    }
  }
  return deletable;
}

}  // namespace cairn::gc
