// File: kube/http_server_asio.cc
//
// The one translation unit that compiles Boost.Asio, Asio SSL and Beast.
// caphv_kube is built with BOOST_ASIO_SEPARATE_COMPILATION and
// BOOST_BEAST_SEPARATE_COMPILATION (public compile definitions, see
// src/CMakeLists.txt), so every other file including Asio/Beast headers
// only sees declarations and links against the definitions compiled here.

#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
