#version 450 core
// Depth-only pass: the depth buffer is the output.
void main() {}
