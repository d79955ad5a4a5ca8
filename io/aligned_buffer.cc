#include "io/aligned_buffer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cairn::io {

AlignedBuffer::AlignedBuffer(size_t capacity, size_t alignment)
    : capacity_(AlignUp(std::max<size_t>(capacity, 1), alignment)), alignment_(alignment) {
  // aligned_alloc wants the size to be a multiple of the alignment, which the
  // rounding above guarantees.
  void* p = std::aligned_alloc(alignment_, capacity_);
  if (p == nullptr) {
    // Out of memory: the engine treats this like a failed operator new.
    std::fprintf(stderr, "cairn: aligned_alloc(%zu) failed\n", capacity_);
    std::abort();
  }
  data_.reset(static_cast<char*>(p));
}

size_t AlignedBuffer::Append(std::string_view data) {
  const size_t n = std::min(data.size(), room());
  if (n > 0) std::memcpy(data_.get() + size_, data.data(), n);
  size_ += n;
  return n;
}

void AlignedBuffer::set_size(size_t n) { size_ = std::min(n, capacity_); }

void AlignedBuffer::DropPrefix(size_t n) {
  n = std::min(n, size_);
  if (n == 0) return;
  std::memmove(data_.get(), data_.get() + n, size_ - n);
  size_ -= n;
}

void AlignedBuffer::ZeroFill(size_t end) {
  end = std::min(end, capacity_);
  if (end > size_) std::memset(data_.get() + size_, 0, end - size_);
}

}  // namespace cairn::io
