// A FIFO that grows by doubling and never shrinks: no allocation once it has reached its working size
// (std::deque allocates and frees a block every few hundred elements).
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

namespace tracemod {

template <typename T>
class Ring {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }
  T& back() { return slots_[(head_ + size_ - 1) & (capacity_ - 1)]; }
  const T& operator[](size_t i) const { return slots_[(head_ + i) & (capacity_ - 1)]; }  // i < size()

  void push_back(T&& v) {
    if (size_ == capacity_) grow();
    slots_[(head_ + size_) & (capacity_ - 1)] = std::move(v);
    ++size_;
  }

  T pop_front() {
    T v = std::move(slots_[head_]);
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
    return v;
  }

 private:
  void grow() {
    size_t cap = capacity_ ? capacity_ * 2 : 64;
    auto bigger = std::make_unique<T[]>(cap);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move(slots_[(head_ + i) & (capacity_ - 1)]);
    slots_ = std::move(bigger);
    capacity_ = cap;
    head_ = 0;
  }

  std::unique_ptr<T[]> slots_;
  size_t capacity_ = 0, head_ = 0, size_ = 0;
};

}  // namespace tracemod
