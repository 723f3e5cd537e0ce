// defines: SameInode, ParentOf, NameTheSameFile
//
// Whether two paths a user typed name one file, however they are spelled
// ("run", "./run/", "run/.", a symbolic link to it): by device and inode,
// never by text. dmlp-verify asks it of RUN_DIR and --against's GOLDEN (one
// directory twice proves nothing) and of the report files (--json=FILE and
// --html=FILE on one file would keep only the last one written).
#pragma once

#include <sys/stat.h>

#include <string>

namespace dmlp::verify {

/// Whether two stat results are one file (device and inode).
bool SameInode(const struct stat& a, const struct stat& b);

/// The directory part of `path`: "." for a bare name, "/" for "/name".
std::string ParentOf(const std::string& path);

/// Whether `a` and `b` name one file: both exist and are one inode (symbolic
/// links followed), or neither exists yet and both would be created under the
/// same name in one directory.
bool NameTheSameFile(const std::string& a, const std::string& b);

}  // namespace dmlp::verify
