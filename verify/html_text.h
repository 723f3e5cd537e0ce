// defines: HtmlEscape, kReplacementCharacter
//
// The one way text from a run directory (file names, result.json fields,
// finding messages that quote them) enters the HTML report. Everything a
// browser could read as markup is escaped (& < > " '), so a field holding
// `<script>` or `</svg>` renders as those characters, inside text and inside
// attribute values alike. Bytes that are not valid UTF-8 become U+FFFD, one
// per maximal invalid subpart, as the JSON report's writer does (nlohmann's
// error_handler_t::replace), so both reports show the same text. Control
// characters (C0 other than tab and newline, DEL, C1) become U+FFFD too: HTML has no valid
// spelling for them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dmlp::verify {

inline constexpr char kReplacementCharacter[] = "\xEF\xBF\xBD";

/// `text` escaped for HTML text or a quoted attribute; after `limit` input bytes, "…".
std::string HtmlEscape(std::string_view text, size_t limit = std::string_view::npos);

}  // namespace dmlp::verify
