// File: backup/archive.h
//
// Where a backup lives: a directory of files, or a gzip'd tarball (a name
// ending in .tar.gz or .tgz) written and read by tar(1), whose entries are
// under one folder named after the file ("caphv-backup.tar.gz" holds
// "caphv-backup/manifest.yaml", ...). The files hold Secrets: directories are
// made 0700, files 0600.
//
// Thread safety: none needed (the command's thread); the tarball is made in
// and read from a temporary directory removed afterwards.

#pragma once

#include <map>
#include <string>
#include <string_view>

#include "kube/status.h"

namespace caphv::backup {

// Whether `path` names a tarball (.tar.gz, .tgz).
bool IsTarball(std::string_view path);

// Writes `files` (name -> content) to `path`: a directory, made when absent
// (kAlreadyExists when it exists and is not empty), or a tarball (replaced
// when it exists). kInternal with tar's message when tar fails.
kube::Status WriteArchive(const std::string& path, const std::map<std::string, std::string>& files);

// The regular files of the backup at `path` (a directory, or a tarball
// holding them at its top or in one folder): name -> content. kNotFound when
// `path` does not exist; kInvalidArgument when it is neither.
kube::StatusOr<std::map<std::string, std::string>> ReadArchive(const std::string& path);

}  // namespace caphv::backup
