#version 450 core
// The sample count a multisampled texture really has (a driver may give more samples than asked
// for: llvmpipe offers 4x only). render.Renderer asks once per requested count.
layout(local_size_x = 1) in;
uniform sampler2DMS u_texture;
layout(std430, binding = 0) writeonly buffer Result { int samples; };
void main() {
    samples = textureSamples(u_texture);
}
