#include <gtest/gtest.h>

#include <memory>
#include <new>
#include <utility>

#include "fake.hh"
#include "packet/buffer_pool.hh"
#include "packet/ring.hh"

namespace tracemod {
namespace {

// ---- Ring ----

TEST(Ring, StartsEmpty) {
  Ring<int> r;
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.size(), 0u);
}

TEST(Ring, FifoAcrossSeveralGrowths) {
  Ring<int> r;
  for (int i = 0; i < 1000; ++i) {
    r.push_back(int(i));
    ASSERT_EQ(r.back(), i);
  }
  EXPECT_EQ(r.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(r.front(), i);
    ASSERT_EQ(r.pop_front(), i);
  }
  EXPECT_TRUE(r.empty());
}

TEST(Ring, FifoWhenGrowingWhileWrappedAround) {
  Ring<int> r;
  int next_in = 0, next_out = 0;
  for (int i = 0; i < 60; ++i) r.push_back(next_in++);
  for (int i = 0; i < 50; ++i) ASSERT_EQ(r.pop_front(), next_out++);
  // Head is now at slot 50 of 64: these wrap past the end, then force growth with the contents split in two.
  for (int i = 0; i < 300; ++i) r.push_back(next_in++);
  EXPECT_EQ(r.size(), 310u);
  while (!r.empty()) ASSERT_EQ(r.pop_front(), next_out++);
  EXPECT_EQ(next_out, next_in);
}

TEST(Ring, SteadyStateWrapsManyTimes) {
  Ring<int> r;
  int next_in = 0, next_out = 0;
  for (int round = 0; round < 10000; ++round) {
    for (int k = 0; k < 1 + round % 5; ++k) r.push_back(next_in++);
    while (r.size() > 20) ASSERT_EQ(r.pop_front(), next_out++);
  }
  while (!r.empty()) ASSERT_EQ(r.pop_front(), next_out++);
  EXPECT_EQ(next_out, next_in);
}

TEST(Ring, HoldsMoveOnlyValues) {
  Ring<std::unique_ptr<int>> r;
  for (int i = 0; i < 100; ++i) r.push_back(std::make_unique<int>(i));
  for (int i = 0; i < 100; ++i) {
    auto p = r.pop_front();
    ASSERT_TRUE(p);
    ASSERT_EQ(*p, i);
  }
}

// ---- BufferPool ----

TEST(BufferPool, ClassSizeForPicksSmallestFittingClass) {
  EXPECT_EQ(BufferPool::class_size_for(0), 2048u);
  EXPECT_EQ(BufferPool::class_size_for(1), 2048u);
  EXPECT_EQ(BufferPool::class_size_for(2048), 2048u);
  EXPECT_EQ(BufferPool::class_size_for(2049), 16384u);
  EXPECT_EQ(BufferPool::class_size_for(16384), 16384u);
  EXPECT_EQ(BufferPool::class_size_for(16385), 65536u + 512);
  EXPECT_EQ(BufferPool::class_size_for(BufferPool::kMaxSize), BufferPool::kMaxSize);
  EXPECT_EQ(BufferPool::class_size_for(BufferPool::kMaxSize + 1), 0u);
}

TEST(BufferPool, GetReturnsBufferOfItsClass) {
  BufferPool pool;
  EXPECT_EQ(pool.get(60).capacity(), 2048u);
  EXPECT_EQ(pool.get(2049).capacity(), 16384u);
  EXPECT_EQ(pool.get(kVnetHeaderSize + kEthernetHeaderSize + 65535).capacity(), BufferPool::kMaxSize);
  EXPECT_EQ(pool.bytes_allocated(), 2048u + 16384u + BufferPool::kMaxSize);
}

TEST(BufferPool, OversizeRequestThrows) {
  BufferPool pool;
  EXPECT_THROW(pool.get(BufferPool::kMaxSize + 1), std::bad_alloc);
  EXPECT_EQ(pool.bytes_allocated(), 0u);
}

TEST(BufferPool, ReturnedBufferIsReusedWithoutNewAllocation) {
  BufferPool pool;
  uint8_t* first;
  {
    Buffer b = pool.get(1500);
    first = b.data();
  }
  const size_t allocated = pool.bytes_allocated();
  EXPECT_EQ(allocated, 2048u);
  for (int i = 0; i < 1000; ++i) {
    Buffer b = pool.get(100 + i);
    ASSERT_EQ(b.data(), first);
  }
  EXPECT_EQ(pool.bytes_allocated(), allocated);
}

TEST(BufferPool, WorkingSetIsAllocatedOnce) {
  BufferPool pool;
  std::vector<Buffer> held;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 32; ++i) held.push_back(pool.get(i % 3 == 0 ? 9000 : 1500));
    held.clear();
    if (round == 0) {
      ASSERT_EQ(pool.bytes_allocated(), 21u * 2048 + 11u * 16384);
    }
  }
  EXPECT_EQ(pool.bytes_allocated(), 21u * 2048 + 11u * 16384);
}

TEST(BufferPool, SizeClassesDoNotShareBuffers) {
  BufferPool pool;
  {
    Buffer small = pool.get(100);
  }
  Buffer big = pool.get(5000);  // the free small buffer cannot serve this
  EXPECT_EQ(big.capacity(), 16384u);
  EXPECT_EQ(pool.bytes_allocated(), 2048u + 16384u);
}

TEST(Buffer, DefaultIsEmpty) {
  Buffer b;
  EXPECT_FALSE(b);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.capacity(), 0u);
}

TEST(Buffer, MoveConstructionTransfersOwnership) {
  BufferPool pool;
  Buffer a = pool.get(100);
  uint8_t* d = a.data();
  Buffer b(std::move(a));
  EXPECT_EQ(b.data(), d);
  EXPECT_EQ(b.capacity(), 2048u);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): the moved-from state is what is being tested
  EXPECT_EQ(a.capacity(), 0u);
}

TEST(Buffer, MoveAssignmentReturnsTheOverwrittenBufferToThePool) {
  BufferPool pool;
  Buffer a = pool.get(100), b = pool.get(100);
  uint8_t* da = a.data();
  uint8_t* db = b.data();
  ASSERT_NE(da, db);
  b = std::move(a);
  EXPECT_EQ(b.data(), da);
  EXPECT_FALSE(a);           // NOLINT(bugprone-use-after-move)
  Buffer c = pool.get(100);  // b's old buffer went back to the free list
  EXPECT_EQ(c.data(), db);
  EXPECT_EQ(pool.bytes_allocated(), 2 * 2048u);
}

TEST(Buffer, SelfMoveAssignmentKeepsTheBuffer) {
  BufferPool pool;
  Buffer a = pool.get(100);
  uint8_t* d = a.data();
  Buffer& alias = a;
  a = std::move(alias);
  EXPECT_EQ(a.data(), d);
}

TEST(Buffer, MovedFromBufferReturnsNothingToThePool) {
  BufferPool pool;
  uint8_t* d;
  {
    Buffer a = pool.get(100);
    d = a.data();
    Buffer b(std::move(a));
  }  // both destroyed: exactly one buffer on the free list
  Buffer x = pool.get(100), y = pool.get(100);
  EXPECT_EQ(x.data(), d);
  EXPECT_NE(y.data(), d);
  EXPECT_EQ(pool.bytes_allocated(), 2 * 2048u);
}

TEST(Packet, MoveCarriesBufferAndTimes) {
  BufferPool pool;
  Packet p = fake::udp4(pool, 100, 77);
  uint8_t* d = p.buf.data();
  Packet q = std::move(p);
  EXPECT_EQ(q.buf.data(), d);
  EXPECT_EQ(q.arrival, 77);
  EXPECT_EQ(q.frame_size(), 14u + 20 + 8 + 100);
  EXPECT_EQ(q.ip_size(), 20u + 8 + 100);
  EXPECT_FALSE(p.buf);  // NOLINT(bugprone-use-after-move)
}

}  // namespace
}  // namespace tracemod
