--- bench/gpu/resnet.lua — ResNet-50 (v2, pre-activation bottleneck units) as MXNet's
--- example/image-classification/symbols/resnet.py builds it for ImageNet: units {3,4,6,3},
--- filters {64,256,512,1024,2048}, 224x224 inputs. `dtype = 'float16'` casts the data to
--- float16 after the input and the last FC output back to float32 before the softmax, as
--- MXNet's fp16 training recipe does (BatchNorm keeps float32 statistics).
--
--   local resnet = dofile('bench/gpu/resnet.lua')
--   local net = resnet(mx, {num_classes = 1000, dtype = 'float16'})
return function(mx, o)
  local S = mx.sym
  local nclass, dtype = o.num_classes or 1000, o.dtype or 'float32'
  local bn_mom, eps = 0.9, 2e-5

  local function bn(x, name)
    return S.BatchNorm{data = x, fix_gamma = false, eps = eps, momentum = bn_mom, name = name}
  end
  local function conv(x, nf, k, s, p, name)
    return S.Convolution{data = x, num_filter = nf, kernel = {k, k}, stride = {s, s},
                         pad = {p, p}, no_bias = true, name = name}
  end
  local function relu(x, name) return S.Activation{data = x, act_type = 'relu', name = name} end

  -- one bottleneck unit: BN-ReLU-conv1x1, BN-ReLU-conv3x3(stride), BN-ReLU-conv1x1, + shortcut
  local function unit(x, nf, stride, dim_match, name)
    local a1 = relu(bn(x, name .. '_bn1'), name .. '_relu1')
    local c1 = conv(a1, nf / 4, 1, 1, 0, name .. '_conv1')
    local a2 = relu(bn(c1, name .. '_bn2'), name .. '_relu2')
    local c2 = conv(a2, nf / 4, 3, stride, 1, name .. '_conv2')
    local a3 = relu(bn(c2, name .. '_bn3'), name .. '_relu3')
    local c3 = conv(a3, nf, 1, 1, 0, name .. '_conv3')
    local short = dim_match and x or conv(a1, nf, 1, stride, 0, name .. '_sc')
    return c3 + short
  end

  local units, filters = {3, 4, 6, 3}, {64, 256, 512, 1024, 2048}
  local x = S.Variable('data')
  if dtype == 'float16' then x = S.Cast{data = x, dtype = 'float16'} end
  x = S.BatchNorm{data = x, fix_gamma = true, eps = eps, momentum = bn_mom, name = 'bn_data'}
  x = conv(x, filters[1], 7, 2, 3, 'conv0')
  x = relu(bn(x, 'bn0'), 'relu0')
  x = S.Pooling{data = x, kernel = {3, 3}, stride = {2, 2}, pad = {1, 1}, pool_type = 'max'}
  for i = 1, 4 do
    local stride = i == 1 and 1 or 2
    x = unit(x, filters[i + 1], stride, false, ('stage%d_unit1'):format(i))
    for j = 2, units[i] do x = unit(x, filters[i + 1], 1, true, ('stage%d_unit%d'):format(i, j)) end
  end
  x = relu(bn(x, 'bn1'), 'relu1')
  x = S.Pooling{data = x, global_pool = true, kernel = {7, 7}, pool_type = 'avg', name = 'pool1'}
  x = S.Flatten{data = x}
  x = S.FullyConnected{data = x, num_hidden = nclass, name = 'fc1'}
  if dtype == 'float16' then x = S.Cast{data = x, dtype = 'float32'} end
  return S.SoftmaxOutput{data = x, name = 'softmax'}
end
