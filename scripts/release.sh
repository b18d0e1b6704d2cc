#!/usr/bin/env bash
# Releases every published module of the repository at one version, in one step
# (RELEASING.md): from a clean work tree, it makes every module require the
# repository's modules at VERSION, runs the publish check on the result, commits
# the go.mod files that changed, and creates an annotated tag per published
# module at that commit: VERSION for the core, DIR/VERSION for the module in
# DIR. It pushes nothing: it prints the one command that does.
#
#	scripts/release.sh VERSION      release at VERSION (e.g. v0.2.0)
#	scripts/release.sh -n VERSION   the same in a throwaway clone: shows the commit and the tags,
#	                                every line beginning "dry run: "; it needs no git identity
set -euo pipefail
cd "$(dirname "$0")/.."

dry=false
if [ "${1:-}" = -n ]; then
	dry=true
	shift
fi
if [ $# -ne 1 ]; then
	echo "usage: scripts/release.sh [-n] VERSION" >&2
	exit 2
fi
version=$1
say=""
if $dry; then
	say="dry run: "
fi

if [ -n "$(git status --porcelain)" ]; then
	echo "${say}release: the work tree has changes; release from a clean checkout of a commit CI passed" >&2
	exit 1
fi

if $dry; then
	clone=$(mktemp -d)
	trap 'rm -rf "$clone"' EXIT
	git clone -q "$PWD" "$clone/repo"
	# The clone commits and tags as an identity of its own: a dry run needs
	# none of the user's.
	git -C "$clone/repo" config user.name "release dry run"
	git -C "$clone/repo" config user.email "release-dry-run@localhost"
	# Every line says it is a dry run, the release's own and its errors too.
	{
		echo "in a throwaway clone of $(git rev-parse --short HEAD), removed at the end: nothing here is committed, tagged or pushed"
		RELEASE_DRY_RUN=1 "$clone/repo/scripts/release.sh" "$version"
		echo "the commit and the tags a release would make:"
		git -C "$clone/repo" log -1 --stat --format='%h %s'
		git -C "$clone/repo" tag --points-at HEAD
	} 2>&1 | sed -u 's/^/dry run: /'
	exit 0
fi

tool=$(mktemp -d)
trap 'rm -rf "$tool"' EXIT
go -C internal/release build -o "$tool/release" .
release() { "$tool/release" "$@"; }

out=$(release tags "$version")
mapfile -t tags <<<"$out"
for tag in "${tags[@]}"; do
	if git rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
		echo "release: tag $tag exists already" >&2
		exit 1
	fi
done

echo "== require the repository's modules at $version"
out=$(release setversion "$version")
changed=()
[ -z "$out" ] || mapfile -t changed <<<"$out"
echo "go.mod files changed: ${changed[*]:-none}"
required=$(release check)
if [ -n "$required" ] && [ "$required" != "$version" ]; then
	echo "release: the modules require each other at $required after setting $version" >&2
	exit 1
fi

echo "== the publish check, on what the tags will release"
if ! scripts/publish-check.sh; then
	echo "release: the publish check failed; nothing is committed or tagged${changed[*]:+; undo with: git checkout -- ${changed[*]}}" >&2
	exit 1
fi

if [ ${#changed[@]} -gt 0 ]; then
	git commit -q -m "Release $version: every module requires the repository's modules at $version" -- "${changed[@]}"
	echo "committed: $(git log -1 --format='%h %s')"
fi
echo "== tags at $(git rev-parse --short HEAD)"
for tag in "${tags[@]}"; do
	git tag -a "$tag" -m "$tag"
	echo "$tag"
done
if [ "${RELEASE_DRY_RUN:-}" = 1 ]; then
	echo "a release would then be pushed with: git push origin ${tags[*]}"
else
	echo "push them with: git push origin ${tags[*]}"
fi
