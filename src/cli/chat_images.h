// cli/chat_images: the pictures of a terminal chat message. `/image PATH` queues a file for the
// next message; a message that mentions image files (…/cat.png, 'a b.jpg', a\ b.webp: what a
// terminal pastes for a dragged file) attaches them too. The message then becomes OpenAI
// content parts: the images (file:// URLs, read when the prompt is built) then the text.
// Contract: image_paths_in(text) returns the words of text that name existing files with an
// image extension (.png .jpg .jpeg .webp .gif, any case), unquoted and unescaped, in order,
// each once; user_message(text, paths) is the message's JSON.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/json_py.h"

namespace k3::cli {

std::vector<std::string> image_paths_in(std::string_view text);

text::Json user_message(const std::string& text, const std::vector<std::string>& paths);

}  // namespace k3::cli
