#version 450 core
// Preview key-light shadow map: the depth buffer is the output.

void main() {}
