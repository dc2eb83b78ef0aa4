# Sourced by the CI scripts that need a Debian package: `need COMMAND PACKAGE CHECK` is true
# when COMMAND is there, installing PACKAGE with apt-get when it is missing and this is root;
# otherwise it prints "SKIP CHECK: ..." and is false.
need() { # COMMAND PACKAGE CHECK
  command -v "$1" > /dev/null && return 0
  if [[ $(id -u) != 0 ]] || ! command -v apt-get > /dev/null; then
    echo "SKIP $3: $1 is not installed and this is not root with apt-get to install it"
    return 1
  fi
  echo "$3: installing $2 (apt-get)"
  if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2"; } > /dev/null; then
    echo "SKIP $3: apt-get could not install $2"
    return 1
  fi
}
