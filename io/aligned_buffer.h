// AlignedBuffer is a fixed-capacity byte buffer whose memory is aligned for
// O_DIRECT (kDirectIoAlignment by default), plus the alignment arithmetic the
// direct-I/O paths share. It backs the append buffer of a WritableFile and the
// bounce buffers that widen unaligned direct reads.
//
// Thread safety: none; one owner at a time.
#ifndef CAIRN_IO_ALIGNED_BUFFER_H_
#define CAIRN_IO_ALIGNED_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "io/file_system.h"

namespace cairn::io {

// REQUIRES: alignment is a power of two.
inline constexpr uint64_t AlignDown(uint64_t x, size_t alignment) {
  return x & ~static_cast<uint64_t>(alignment - 1);
}
inline constexpr uint64_t AlignUp(uint64_t x, size_t alignment) {
  return AlignDown(x + alignment - 1, alignment);
}
inline bool IsAligned(uint64_t x, size_t alignment) { return (x & (alignment - 1)) == 0; }
inline bool IsAligned(const void* p, size_t alignment) {
  return IsAligned(reinterpret_cast<uintptr_t>(p), alignment);
}

class AlignedBuffer {
 public:
  // An empty buffer with no memory.
  AlignedBuffer() = default;
  // Allocates at least capacity bytes (rounded up to a multiple of
  // alignment) starting at an address aligned to alignment. Aborts if the
  // process is out of memory.
  explicit AlignedBuffer(size_t capacity, size_t alignment = kDirectIoAlignment);

  AlignedBuffer(AlignedBuffer&&) noexcept = default;
  AlignedBuffer& operator=(AlignedBuffer&&) noexcept = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t capacity() const { return capacity_; }
  size_t alignment() const { return alignment_; }
  // Bytes in use, counted from data().
  size_t size() const { return size_; }
  size_t room() const { return capacity_ - size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {data_.get(), size_}; }

  // Copies as much of data as fits; returns how many bytes were taken.
  size_t Append(std::string_view data);
  // Sets the bytes in use. REQUIRES: n <= capacity().
  void set_size(size_t n);
  void Clear() { size_ = 0; }
  // Drops the first n bytes in use, moving the rest to the front.
  // REQUIRES: n <= size().
  void DropPrefix(size_t n);
  // Zeroes the bytes from size() up to end (exclusive); used to pad a tail
  // block before a direct write. REQUIRES: size() <= end <= capacity().
  void ZeroFill(size_t end);

 private:
  struct FreeDeleter {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, FreeDeleter> data_;
  size_t capacity_ = 0;
  size_t alignment_ = kDirectIoAlignment;
  size_t size_ = 0;
};

}  // namespace cairn::io

#endif  // CAIRN_IO_ALIGNED_BUFFER_H_
