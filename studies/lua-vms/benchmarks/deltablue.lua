-- deltablue: object-oriented pointer chasing -- metatable inheritance,
-- polymorphic method calls, many small collections. The DeltaBlue incremental
-- constraint-hierarchy solver, run on a long equality chain and a scale/offset
-- projection network while edit constraints are added, planned and removed.

---------------------------------------------------------------- strengths
-- lower number = stronger
local REQUIRED, STRONG_PREFERRED, PREFERRED, STRONG_DEFAULT, NORMAL,
      WEAK_DEFAULT, WEAKEST = 0, 1, 2, 3, 4, 5, 6

local function stronger(a, b) return a < b end
local function weaker(a, b) return a > b end
local function weakest_of(a, b) if a > b then return a end return b end

-- direction of a binary constraint
local NONE, FORWARD, BACKWARD = 0, 1, 2

local planner -- the planner the constraints register with (set per test)

---------------------------------------------------------------- small helpers
local function class(parent)
  local c = {}
  c.__index = c
  if parent then setmetatable(c, { __index = parent }) end
  return c
end

local function remove_item(list, item)
  local n = #list
  local j = 0
  for i = 1, n do
    local x = list[i]
    if x ~= item then
      j = j + 1
      list[j] = x
    end
  end
  for i = j + 1, n do list[i] = nil end
end

---------------------------------------------------------------- variables
local Variable = class()

local function newvar(value)
  return setmetatable({
    value = value, constraints = {}, determined_by = nil,
    mark = 0, walk_strength = WEAKEST, stay = true,
  }, Variable)
end

function Variable:add_constraint(c)
  local cs = self.constraints
  cs[#cs + 1] = c
end

function Variable:remove_constraint(c)
  remove_item(self.constraints, c)
  if self.determined_by == c then self.determined_by = nil end
end

---------------------------------------------------------------- constraints
local Constraint = class()

function Constraint:add()
  self:add_to_graph()
  planner:incremental_add(self)
end

-- Try to satisfy this constraint with the given mark; returns the constraint
-- that was displaced (if any).
function Constraint:satisfy(mark)
  self:choose_method(mark)
  if not self:is_satisfied() then
    if self.strength == REQUIRED then error("could not satisfy a required constraint") end
    return nil
  end
  self:mark_inputs(mark)
  local out = self:output()
  local overridden = out.determined_by
  if overridden ~= nil then overridden:mark_unsatisfied() end
  out.determined_by = self
  if not planner:add_propagate(self, mark) then error("cycle encountered") end
  out.mark = mark
  return overridden
end

function Constraint:destroy()
  if self:is_satisfied() then
    planner:incremental_remove(self)
  else
    self:remove_from_graph()
  end
end

function Constraint:is_input() return false end

-- one-variable constraints
local Unary = class(Constraint)

function Unary:init(v, strength)
  self.strength = strength
  self.out = v
  self.satisfied = false
  self:add()
  return self
end

function Unary:add_to_graph()
  self.out:add_constraint(self)
  self.satisfied = false
end

function Unary:choose_method(mark)
  local out = self.out
  self.satisfied = out.mark ~= mark and stronger(self.strength, out.walk_strength)
end

function Unary:is_satisfied() return self.satisfied end
function Unary:mark_inputs(mark) end
function Unary:output() return self.out end

function Unary:recalculate()
  local out = self.out
  out.walk_strength = self.strength
  out.stay = not self:is_input()
  if out.stay then self:execute() end
end

function Unary:mark_unsatisfied() self.satisfied = false end
function Unary:inputs_known(mark) return true end

function Unary:remove_from_graph()
  if self.out ~= nil then self.out:remove_constraint(self) end
  self.satisfied = false
end

-- keeps a variable where it is
local Stay = class(Unary)
function Stay:execute() end
local function newstay(v, strength)
  return setmetatable({}, Stay):init(v, strength)
end

-- marks a variable as externally changed by the user
local Edit = class(Unary)
function Edit:execute() end
function Edit:is_input() return true end
local function newedit(v, strength)
  return setmetatable({}, Edit):init(v, strength)
end

-- two-variable constraints
local Binary = class(Constraint)

function Binary:init(v1, v2, strength)
  self.strength = strength
  self.v1 = v1
  self.v2 = v2
  self.direction = NONE
  self:add()
  return self
end

function Binary:choose_method(mark)
  local v1, v2, s = self.v1, self.v2, self.strength
  if v1.mark == mark then
    if v2.mark ~= mark and stronger(s, v2.walk_strength) then
      self.direction = FORWARD
    else
      self.direction = NONE
    end
  elseif v2.mark == mark then
    if v1.mark ~= mark and stronger(s, v1.walk_strength) then
      self.direction = BACKWARD
    else
      self.direction = NONE
    end
  elseif weaker(v1.walk_strength, v2.walk_strength) then
    -- the weaker side is the one to overwrite
    if stronger(s, v1.walk_strength) then
      self.direction = BACKWARD
    else
      self.direction = NONE
    end
  else
    if stronger(s, v2.walk_strength) then
      self.direction = FORWARD
    else
      self.direction = NONE
    end
  end
end

function Binary:add_to_graph()
  self.v1:add_constraint(self)
  self.v2:add_constraint(self)
  self.direction = NONE
end

function Binary:is_satisfied() return self.direction ~= NONE end
function Binary:mark_inputs(mark) self:input().mark = mark end

function Binary:input()
  if self.direction == FORWARD then return self.v1 end
  return self.v2
end

function Binary:output()
  if self.direction == FORWARD then return self.v2 end
  return self.v1
end

function Binary:recalculate()
  local inp, out = self:input(), self:output()
  out.walk_strength = weakest_of(self.strength, inp.walk_strength)
  out.stay = inp.stay
  if out.stay then self:execute() end
end

function Binary:mark_unsatisfied() self.direction = NONE end

function Binary:inputs_known(mark)
  local inp = self:input()
  return inp.mark == mark or inp.stay or inp.determined_by == nil
end

function Binary:remove_from_graph()
  if self.v1 ~= nil then self.v1:remove_constraint(self) end
  if self.v2 ~= nil then self.v2:remove_constraint(self) end
  self.direction = NONE
end

-- v2 = v1
local Equality = class(Binary)
function Equality:execute()
  self:output().value = self:input().value
end
local function newequality(v1, v2, strength)
  return setmetatable({}, Equality):init(v1, v2, strength)
end

-- dest = src * scale + offset
local Scale = class(Binary)

function Scale:add_to_graph()
  Binary.add_to_graph(self)
  self.scale:add_constraint(self)
  self.offset:add_constraint(self)
end

function Scale:remove_from_graph()
  Binary.remove_from_graph(self)
  if self.scale ~= nil then self.scale:remove_constraint(self) end
  if self.offset ~= nil then self.offset:remove_constraint(self) end
end

function Scale:mark_inputs(mark)
  Binary.mark_inputs(self, mark)
  self.scale.mark = mark
  self.offset.mark = mark
end

function Scale:execute()
  if self.direction == FORWARD then
    self.v2.value = self.v1.value * self.scale.value + self.offset.value
  else
    self.v1.value = (self.v2.value - self.offset.value) / self.scale.value
  end
end

function Scale:recalculate()
  local inp, out = self:input(), self:output()
  out.walk_strength = weakest_of(self.strength, inp.walk_strength)
  out.stay = inp.stay and self.scale.stay and self.offset.stay
  if out.stay then self:execute() end
end

local function newscale(src, scale, offset, dest, strength)
  local c = setmetatable({ scale = scale, offset = offset }, Scale)
  return c:init(src, dest, strength)
end

---------------------------------------------------------------- plans
local function execute_plan(plan)
  for i = 1, #plan do plan[i]:execute() end
end

---------------------------------------------------------------- planner
local Planner = class()

local function newplanner()
  return setmetatable({ current_mark = 0 }, Planner)
end

function Planner:new_mark()
  self.current_mark = self.current_mark + 1
  return self.current_mark
end

function Planner:incremental_add(c)
  local mark = self:new_mark()
  local overridden = c:satisfy(mark)
  while overridden ~= nil do
    overridden = overridden:satisfy(mark)
  end
end

function Planner:incremental_remove(c)
  local out = c:output()
  c:mark_unsatisfied()
  c:remove_from_graph()
  local unsatisfied = self:remove_propagate_from(out)
  local strength = REQUIRED
  repeat
    for i = 1, #unsatisfied do
      local u = unsatisfied[i]
      if u.strength == strength then self:incremental_add(u) end
    end
    strength = strength + 1
  until strength == WEAKEST
end

-- push onto `todo` every satisfied constraint that reads v (other than the
-- one that determines it)
local function add_consumers(v, todo)
  local determining = v.determined_by
  local cs = v.constraints
  for i = 1, #cs do
    local c = cs[i]
    if c ~= determining and c:is_satisfied() then todo[#todo + 1] = c end
  end
end

function Planner:make_plan(sources)
  local mark = self:new_mark()
  local plan = {}
  local todo = sources
  while #todo > 0 do
    local c = todo[#todo]
    todo[#todo] = nil
    local out = c:output()
    if out.mark ~= mark and c:inputs_known(mark) then
      plan[#plan + 1] = c
      out.mark = mark
      add_consumers(out, todo)
    end
  end
  return plan
end

function Planner:extract_plan(constraints)
  local sources = {}
  for i = 1, #constraints do
    local c = constraints[i]
    if c:is_input() and c:is_satisfied() then sources[#sources + 1] = c end
  end
  return self:make_plan(sources)
end

-- Recompute walkabout strengths downstream of c; false if a cycle is found.
function Planner:add_propagate(c, mark)
  local todo = { c }
  while #todo > 0 do
    local d = todo[#todo]
    todo[#todo] = nil
    if d:output().mark == mark then
      self:incremental_remove(c)
      return false
    end
    d:recalculate()
    add_consumers(d:output(), todo)
  end
  return true
end

function Planner:remove_propagate_from(out)
  out.determined_by = nil
  out.walk_strength = WEAKEST
  out.stay = true
  local unsatisfied = {}
  local todo = { out }
  while #todo > 0 do
    local v = todo[#todo]
    todo[#todo] = nil
    local cs = v.constraints
    for i = 1, #cs do
      local c = cs[i]
      if not c:is_satisfied() then unsatisfied[#unsatisfied + 1] = c end
    end
    local determining = v.determined_by
    for i = 1, #cs do
      local c = cs[i]
      if c ~= determining and c:is_satisfied() then
        c:recalculate()
        todo[#todo + 1] = c:output()
      end
    end
  end
  return unsatisfied
end

---------------------------------------------------------------- tests
-- a chain of n equalities; editing the first variable must drive the last
local function chain_test(n)
  planner = newplanner()
  local prev, first, last
  for i = 0, n do
    local v = newvar(0)
    if prev ~= nil then newequality(prev, v, REQUIRED) end
    if i == 0 then first = v end
    if i == n then last = v end
    prev = v
  end
  newstay(last, STRONG_DEFAULT)
  local edit = newedit(first, PREFERRED)
  local plan = planner:extract_plan({ edit })
  local sum = 0
  for i = 1, 100 do
    first.value = i
    execute_plan(plan)
    if last.value ~= i then error("chain test failed") end
    sum = sum + last.value
  end
  return sum, #plan
end

local function change(v, value)
  local edit = newedit(v, PREFERRED)
  local plan = planner:extract_plan({ edit })
  for _ = 1, 10 do
    v.value = value
    execute_plan(plan)
  end
  edit:destroy()
  return #plan
end

-- n source/destination pairs tied by dest = src * scale + offset
local function projection_test(n)
  planner = newplanner()
  local scale = newvar(10)
  local offset = newvar(1000)
  local src, dst
  local dests = {}
  for i = 0, n - 1 do
    src = newvar(i)
    dst = newvar(i)
    dests[#dests + 1] = dst
    newstay(src, NORMAL)
    newscale(src, scale, offset, dst, REQUIRED)
  end
  local plans = 0
  plans = plans + change(src, 17)
  if dst.value ~= 1170 then error("projection 1 failed") end
  plans = plans + change(dst, 1050)
  if src.value ~= 5 then error("projection 2 failed") end
  plans = plans + change(scale, 5)
  for i = 0, n - 2 do
    if dests[i + 1].value ~= i * 5 + 1000 then error("projection 3 failed") end
  end
  plans = plans + change(offset, 2000)
  local total = 0
  for i = 0, n - 2 do
    if dests[i + 1].value ~= i * 5 + 2000 then error("projection 4 failed") end
  end
  for i = 1, n do total = total + dests[i].value end
  return total, plans
end

local function run(n)
  local csum, cplan = chain_test(n)
  local ptotal, pplans = projection_test(n)
  return string.format("chain=%d/%d projection=%.0f/%d", csum, cplan, ptotal, pplans)
end

return { run = run }
