#!/usr/bin/env bash
# Regenerates build/appicon.png (1024x1024): a rounded blue-teal square with two
# white arrows passing each other, the relay's hand-off. Needs ImageMagick 6.
set -euo pipefail
cd "$(dirname "$0")"
IM=${IM:-/usr/bin/convert}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$IM" -size 1024x1024 xc:white -sparse-color Barycentric '0,0 #3b7bf0 1023,1023 #12a08f' "$tmp/bg.png"
"$IM" -size 1024x1024 xc:none -fill white -draw 'roundrectangle 64,64 959,959 200,200' "$tmp/mask.png"
"$IM" "$tmp/bg.png" "$tmp/mask.png" -alpha off -compose CopyOpacity -composite "$tmp/base.png"
"$IM" "$tmp/base.png" -fill white -stroke none \
  -draw 'roundrectangle 250,366 700,434 34,34' -draw 'polygon 660,286 812,400 660,514' \
  -draw 'roundrectangle 324,590 774,658 34,34' -draw 'polygon 364,510 212,624 364,738' \
  -depth 8 -define png:color-type=6 -strip appicon.png
identify appicon.png
