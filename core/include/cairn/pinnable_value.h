// PinnableValue receives a value from DB::Get without a copy where one can
// be avoided: a value served from the value cache is shared (the cache
// entry stays alive while the PinnableValue holds it, even if the cache
// evicts it meanwhile); any other value is read into the PinnableValue's
// own buffer, whose capacity is reused by the next Get into it.
//
// Thread safety: one thread at a time; the shared bytes are immutable.
#ifndef CAIRN_PINNABLE_VALUE_H_
#define CAIRN_PINNABLE_VALUE_H_

#include <memory>
#include <string>
#include <string_view>

namespace cairn {

class PinnableValue {
 public:
  PinnableValue() = default;
  PinnableValue(PinnableValue&&) = default;
  PinnableValue& operator=(PinnableValue&&) = default;

  // The value; valid until the next Get into this object, Reset, or its end.
  std::string_view value() const {
    return pinned_ != nullptr ? std::string_view(*pinned_) : std::string_view(own_);
  }
  size_t size() const { return value().size(); }
  // True when value() shares cached bytes rather than owning a copy.
  bool pinned() const { return pinned_ != nullptr; }
  // Releases a shared value; keeps the own buffer's capacity.
  void Reset() {
    pinned_.reset();
    own_.clear();
  }

  // For the engine: share immutable bytes, or fill the own buffer.
  void Pin(std::shared_ptr<const std::string> bytes) {
    own_.clear();
    pinned_ = std::move(bytes);
  }
  std::string* OwnBuffer() {
    pinned_.reset();
    return &own_;
  }

 private:
  std::shared_ptr<const std::string> pinned_;
  std::string own_;
};

}  // namespace cairn

#endif  // CAIRN_PINNABLE_VALUE_H_
