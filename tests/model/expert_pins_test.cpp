// tests/model/expert_pins_test: a failing expert read (acquire throws, as a store's disk read
// can) leaves no expert acquired: every acquire has its release, the failed decode reports the
// error, and the same engine decodes again afterwards.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <utility>

#include "core/error.h"
#include "model/golden_util.h"
#include "model/expert_source.h"
#include "runtime/engine.h"

namespace k3::test {
namespace {

// Wraps the mapped source; counts pins and throws on the n-th acquire when armed.
class FlakySource : public model::ExpertSource {
 public:
  explicit FlakySource(std::unique_ptr<model::ExpertSource> inner) : inner_(std::move(inner)) {}
  void will_need(uint32_t l, std::span<const int32_t> e) override { inner_->will_need(l, e); }
  model::ExpertWeights acquire(uint32_t l, int32_t e) override {
    if (fail_at_ > 0 && ++n_acquire_ == fail_at_) fail("simulated read error (layer {}, expert {})", l, e);
    ++held_[{l, e}];
    return inner_->acquire(l, e);
  }
  void release(uint32_t l, int32_t e) override {
    if (--held_[{l, e}] == 0) held_.erase({l, e});
    inner_->release(l, e);
  }
  void arm(int n) { fail_at_ = n, n_acquire_ = 0; }
  size_t held() const { return held_.size(); }

 private:
  std::unique_ptr<model::ExpertSource> inner_;
  std::map<std::pair<uint32_t, int32_t>, int> held_;
  int fail_at_ = 0, n_acquire_ = 0;
};

TEST(ExpertPins, AFailedReadReleasesEverythingItAcquired) {
  std::shared_ptr<model::Model> m = model::Model::load(golden_dir() + "/small-q8_0.gguf");
  auto flaky = std::make_unique<FlakySource>(model::make_mapped_expert_source(m->gguf(), m->hparams()));
  FlakySource* src = flaky.get();
  m->set_expert_source(std::move(flaky));
  runtime::EngineOptions eo;
  eo.n_threads = 1;
  runtime::Engine eng(m, eo);
  std::vector<runtime::BatchToken> batch;
  for (int32_t i = 0; i < 16; ++i) batch.push_back({65 + i, 0, -1, i == 15});
  const std::vector<float> clean = eng.decode(batch);
  EXPECT_EQ(src->held(), 0u);
  for (int n : {1, 2, 3, 5, 9}) {  // the first, a middle and a later expert of the batch
    eng.seq_clear(0);
    src->arm(n);
    EXPECT_THROW(eng.decode(batch), Error) << n;
    EXPECT_EQ(src->held(), 0u) << "pins left after a failure at acquire " << n;
  }
  src->arm(0);
  eng.seq_clear(0);
  EXPECT_EQ(eng.decode(batch), clean);
  EXPECT_EQ(src->held(), 0u);
}

}  // namespace
}  // namespace k3::test
