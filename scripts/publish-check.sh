#!/usr/bin/env bash
# Checks that every published module of the repository can be fetched and used
# once tagged: it publishes the working tree, as a release would tag it, to a
# module proxy in a temporary directory, at a test version, and then, in a
# module of its own outside the repository, as a user would, fetches each
# published module with `go get MODULE@latest`, and builds and runs a small
# program against it (internal/release/testdata/programs/DIR/main.go, where DIR
# is the module's directory, "core" for the core). It also asserts that the core
# brings no other module into a user's build, and prints what each module brings.
# Only the published modules come from the local proxy; their dependencies come
# from the module cache or the public proxy. RELEASING.md describes the release.
#
#	scripts/publish-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# A pre-release no real release will carry, of its own for each run, so that
# runs at the same time do not meet in the module cache.
version=v0.99.0-ci.$$

tmp=$(mktemp -d)
cache=$(go env GOMODCACHE)
# forget removes the test version from the module cache (which is read-only).
forget() {
	[ -d "$cache/github.com/fairsem" ] || return 0
	find "$cache/github.com/fairsem" -type d -name "*@$version" -prune -exec chmod -R u+w {} + -exec rm -rf {} +
	find "$cache/cache/download/github.com/fairsem" -name "$version.*" -delete
	find "$cache/cache/download/github.com/fairsem" -name list -exec sed -i "/^${version//./\\.}\$/d" {} +
	find "$cache/cache/download/github.com/fairsem" -name list -empty -delete
}
trap 'forget; rm -rf "$tmp"' EXIT

go -C internal/release build -o "$tmp/release" .
release() { "$tmp/release" -root "$root" "$@"; }

echo "== requirements between the repository's modules"
required=$(release check)
echo "each module requires the others at ${required:-(none)}, with a replace directive beside it"

echo "== publish the working tree at $version to a local module proxy"
release publish "$version" "$tmp/proxy"
mapfile -t published < <(release modules | awk '$3 == "published" { print $1 }')
echo "published: ${published[*]}"

# A user's environment: no workspace, go.mod updated as needed, the published
# modules from the local proxy and every other module as usual. The test
# version is in no checksum database.
export GOWORK=off GOFLAGS=-mod=mod GOPRIVATE= GONOPROXY= GONOSUMDB=github.com/fairsem \
	GOPROXY="file://$tmp/proxy,https://proxy.golang.org"

# gomod_paths prints the module path and the required modules of the go.mod in $1.
gomod_paths() { go -C "$1" mod edit -json | sed -n 's/^[[:space:]]*"Path": "\(.*\)",*$/\1/p'; }

summary=()
for dir in "${published[@]}"; do
	if [ "$dir" = . ]; then
		mod=github.com/fairsem/semaphore name=core
	else
		mod=github.com/fairsem/semaphore/$dir name=$dir
	fi
	program=$root/internal/release/testdata/programs/$name/main.go
	if [ ! -f "$program" ]; then
		echo "no program for the published module $mod: write one at ${program#"$root"/}"
		exit 1
	fi
	echo "== $mod: go get $mod@latest, then build and run a program using it"
	user=$tmp/users/$name
	mkdir -p "$user"
	cp "$program" "$user/main.go"
	(
		cd "$user"
		go mod init example.com/user >/dev/null 2>&1
		go get "$mod@latest"
		go mod tidy
		go vet .
		go run .
	)
	graph=$(go -C "$user" list -m all | tail -n +2)
	linked=$(go -C "$user" list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}}{{end}}{{end}}' . | sort -u)
	summary+=("$(printf '%-40s %3d %3d' "$mod" "$(wc -l <<<"$graph")" "$(grep -c . <<<"$linked")")")

	if [ "$dir" = . ]; then
		# The core links no module but itself and the user's go.mod requires it
		# alone. The module graph and go.sum hold no module beyond the core's own
		# go.mod requirements: its tests' dependencies, which graph pruning lists
		# and go mod tidy records (so that `go test all` could build the core's
		# tests), but which no build of the user's packages compiles.
		[ "$linked" = "$mod" ] || { echo "a program using the core links other modules:"; echo "$linked"; exit 1; }
		requires=$(gomod_paths "$user" | grep -v '^example.com/user$')
		[ "$requires" = "$mod" ] || { echo "the user's go.mod requires more than the core:"; cat "$user/go.mod"; exit 1; }
		extra=$(comm -23 <({ awk '{ print $1 }' <<<"$graph"; awk '{ print $1 }' "$user/go.sum"; } | sort -u) <(gomod_paths "$root" | sort))
		[ -z "$extra" ] || { echo "the core brings into a user's module graph or go.sum modules its go.mod does not require:"; echo "$extra"; exit 1; }
		echo "the core links no other module; the user's go.mod requires it alone; its own go.mod's requirements in the module graph: $(awk '{ print $1 }' <<<"$graph" | grep -vx "$mod" | tr '\n' ' ')"
	fi
done

echo "== what each published module brings into a user's module: modules in 'go list -m all' (the user's own aside), modules linked into the program"
printf '%s\n' "${summary[@]}"
