"""Small multi-file projects the language-server tests and benchmark share."""

from __future__ import annotations

from pathlib import Path


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


PY_PROJECT = {
    "pyproject.toml": '[project]\nname = "shapes"\nversion = "0.1"\n',
    "shapes/__init__.py": "",
    "shapes/geometry.py": (
        "class Point:\n"
        "    def __init__(self, x: float, y: float) -> None:\n"
        "        self.x = x\n"
        "        self.y = y\n"
        "\n"
        "    def norm(self) -> float:\n"
        "        return (self.x**2 + self.y**2) ** 0.5\n"
        "\n"
        "\n"
        "def origin() -> Point:\n"
        "    return Point(0.0, 0.0)\n"
    ),
    "shapes/use.py": (
        "from shapes.geometry import Point, origin\n"
        "\n"
        "\n"
        "def distance(p: Point) -> float:\n"
        "    return p.norm()\n"
        "\n"
        "\n"
        "total: float = distance(origin()) + distance(Point(3.0, 4.0))\n"
    ),
}

TS_PROJECT = {
    "package.json": '{"name": "shapes", "version": "0.1.0", "private": true}\n',
    "tsconfig.json": (
        '{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs",'
        ' "noEmit": true}, "include": ["src"]}\n'
    ),
    "src/geometry.ts": (
        "export class Point {\n"
        "  constructor(public x: number, public y: number) {}\n"
        "\n"
        "  norm(): number {\n"
        "    return Math.sqrt(this.x ** 2 + this.y ** 2);\n"
        "  }\n"
        "}\n"
        "\n"
        "export function origin(): Point {\n"
        "  return new Point(0, 0);\n"
        "}\n"
    ),
    "src/use.ts": (
        'import { Point, origin } from "./geometry";\n'
        "\n"
        "export function distance(p: Point): number {\n"
        "  return p.norm();\n"
        "}\n"
        "\n"
        "export const total: number = distance(origin()) + distance(new Point(3, 4));\n"
    ),
}
