#include "packet/buffer_pool.hh"

#include <cstdlib>
#include <new>

namespace tracemod {

size_t BufferPool::class_size_for(size_t size) {
  for (size_t s : kClassSizes)
    if (size <= s) return s;
  return 0;
}

Buffer BufferPool::get(size_t size) {
  uint8_t cls = 0;
  while (cls < 3 && size > kClassSizes[cls]) ++cls;
  if (cls == 3) throw std::bad_alloc();
  if (!free_[cls].empty()) {
    uint8_t* d = free_[cls].back();
    free_[cls].pop_back();
    return Buffer(d, cls, this);
  }
  void* d = std::aligned_alloc(64, kClassSizes[cls]);
  if (!d) throw std::bad_alloc();
  allocated_ += kClassSizes[cls];
  return Buffer(static_cast<uint8_t*>(d), cls, this);
}

BufferPool::~BufferPool() {
  // Buffers still on loan must be destroyed before their pool; the ferry owns both in that order.
  for (auto& list : free_)
    for (uint8_t* d : list) std::free(d);
}

}  // namespace tracemod
