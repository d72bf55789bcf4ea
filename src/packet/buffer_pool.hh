// Packet memory without per-packet allocation: three size classes, each a free list that only grows.
// Small packets are kept in small buffers so a queue of ACKs does not pin 64 KiB apiece.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tracemod {

class BufferPool;

// A buffer on loan from a pool; goes back when destroyed. Move-only.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { release(); }
  Buffer(Buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), class_(o.class_), pool_(std::exchange(o.pool_, nullptr)) {}
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t capacity() const;
  explicit operator bool() const { return data_ != nullptr; }

 private:
  friend class BufferPool;
  Buffer(uint8_t* d, uint8_t c, BufferPool* p) : data_(d), class_(c), pool_(p) {}
  void release();
  uint8_t* data_ = nullptr;
  uint8_t class_ = 0;
  BufferPool* pool_ = nullptr;
};

class BufferPool {
 public:
  // Large enough for a 64 KiB GSO frame, its Ethernet header and the virtio-net header in front.
  static constexpr size_t kClassSizes[] = {2048, 16384, 65536 + 512};
  static constexpr size_t kMaxSize = kClassSizes[2];

  BufferPool() = default;
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least SIZE bytes (SIZE <= kMaxSize).
  Buffer get(size_t size);
  static size_t class_size_for(size_t size);
  size_t bytes_allocated() const { return allocated_; }

 private:
  friend class Buffer;
  void put(uint8_t* data, uint8_t cls) { free_[cls].push_back(data); }
  std::vector<uint8_t*> free_[3];
  size_t allocated_ = 0;
};

inline size_t Buffer::capacity() const {
  return data_ ? BufferPool::kClassSizes[class_] : 0;
}

inline void Buffer::release() {
  if (data_) pool_->put(data_, class_);
  data_ = nullptr;
}

inline Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    class_ = o.class_;
    pool_ = std::exchange(o.pool_, nullptr);
  }
  return *this;
}

}  // namespace tracemod
