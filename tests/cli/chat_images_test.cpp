// k3 chat's image attachments: which words of a message name image files (as typed, quoted, or
// escaped the way a terminal pastes a dragged file), and the message they make.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/chat_images.h"
#include "common/temp_dir.h"

namespace k3::cli {
namespace {

void touch(const std::string& p) {
  FILE* f = std::fopen(p.c_str(), "wb");
  ASSERT_TRUE(f) << p;
  std::fclose(f);
}

TEST(ChatImages, FindsExistingImageFilesHoweverTheyArePasted) {
  test::TempDir d;
  touch(d.path + "/cat.png");
  touch(d.path + "/two words.JPG");
  touch(d.path + "/notes.txt");
  const std::string cat = d.path + "/cat.png", two = d.path + "/two words.JPG";
  EXPECT_EQ(image_paths_in("what is in " + cat + "?"), std::vector<std::string>{cat});
  EXPECT_EQ(image_paths_in("look: '" + two + "' please"), std::vector<std::string>{two});
  EXPECT_EQ(image_paths_in(d.path + "/two\\ words.JPG"), std::vector<std::string>{two});
  EXPECT_EQ(image_paths_in("file://" + cat + " and " + cat), std::vector<std::string>{cat});  // once
  EXPECT_TRUE(image_paths_in(d.path + "/notes.txt " + d.path + "/missing.png").empty());
  EXPECT_TRUE(image_paths_in("a plain message, no files.").empty());
}

TEST(ChatImages, TheMessageHasTheImagesFirstThenTheText) {
  const text::Json m = user_message("what is it?", {"/tmp/a.png"});
  ASSERT_TRUE(m["content"].is_array());
  EXPECT_EQ(m["content"][0]["type"], "image_url");
  EXPECT_EQ(m["content"][0]["image_url"]["url"], "file:///tmp/a.png");
  EXPECT_EQ(m["content"][1]["text"], "what is it?");
  EXPECT_EQ(user_message("hi", {})["content"], "hi");
}

}  // namespace
}  // namespace k3::cli
