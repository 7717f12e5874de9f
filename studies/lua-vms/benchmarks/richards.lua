-- richards: object-oriented code -- method calls through metatables,
-- polymorphic dispatch, linked lists of small records, state flags. Simulates
-- Martin Richards' tiny OS kernel (idle task, worker, two handlers, two
-- devices exchanging packets); returns the queue and hold counters.

local ID_IDLE, ID_WORKER, ID_HANDLER_A, ID_HANDLER_B, ID_DEVICE_A, ID_DEVICE_B =
  1, 2, 3, 4, 5, 6
local KIND_DEVICE, KIND_WORK = 0, 1
local DATA_SIZE = 4

-- 16-bit exclusive or, done with arithmetic so it runs on every VM
local function xor16(a, b)
  local r, bit = 0, 1
  for _ = 1, 16 do
    local x, y = a % 2, b % 2
    if x ~= y then r = r + bit end
    a = (a - x) / 2
    b = (b - y) / 2
    bit = bit * 2
  end
  return r
end

---------------------------------------------------------------- packets
local Packet = {}
Packet.__index = Packet

local function newpacket(link, id, kind)
  local data = {}
  for i = 1, DATA_SIZE do data[i] = 0 end
  return setmetatable({ link = link, id = id, kind = kind, a1 = 0, a2 = data }, Packet)
end

-- append self at the end of queue, return the queue head
function Packet:append_to(queue)
  self.link = nil
  if queue == nil then return self end
  local last = queue
  local nxt = last.link
  while nxt ~= nil do
    last = nxt
    nxt = last.link
  end
  last.link = self
  return queue
end

---------------------------------------------------------------- task control blocks
local Tcb = {}
Tcb.__index = Tcb

local function newtcb(link, id, priority, queue, task)
  return setmetatable({
    link = link, id = id, priority = priority, queue = queue, task = task,
    pending = queue ~= nil,  -- a packet is waiting
    waiting = true,          -- the task is suspended
    holding = false,         -- the task is held
  }, Tcb)
end

function Tcb:blocked()
  return self.holding or (self.waiting and not self.pending)
end

function Tcb:set_running()
  self.pending, self.waiting, self.holding = false, false, false
end

function Tcb:run()
  local packet = nil
  if self.waiting and self.pending and not self.holding then
    packet = self.queue
    self.queue = packet.link
    self.waiting = false
    self.pending = self.queue ~= nil
  end
  return self.task:run(packet)
end

-- a packet arrives for this task while `current` is running
function Tcb:enqueue(current, packet)
  if self.queue == nil then
    self.queue = packet
    self.pending = true
    if self.priority > current.priority then return self end
  else
    self.queue = packet:append_to(self.queue)
  end
  return current
end

---------------------------------------------------------------- scheduler
local Scheduler = {}
Scheduler.__index = Scheduler

local function newscheduler()
  return setmetatable({
    queue_count = 0, hold_count = 0, blocks = {}, list = nil,
    current = nil, current_id = nil,
  }, Scheduler)
end

function Scheduler:add_task(id, priority, queue, task)
  local tcb = newtcb(self.list, id, priority, queue, task)
  self.list = tcb
  self.current = tcb
  self.blocks[id] = tcb
end

function Scheduler:schedule()
  local tcb = self.list
  while tcb ~= nil do
    if tcb:blocked() then
      tcb = tcb.link
    else
      self.current = tcb
      self.current_id = tcb.id
      tcb = tcb:run()
    end
  end
end

function Scheduler:release(id)
  local tcb = self.blocks[id]
  if tcb == nil then return tcb end
  tcb.holding = false
  if tcb.priority > self.current.priority then return tcb end
  return self.current
end

function Scheduler:hold_current()
  self.hold_count = self.hold_count + 1
  self.current.holding = true
  return self.current.link
end

function Scheduler:suspend_current()
  self.current.waiting = true
  return self.current
end

function Scheduler:send(packet)
  local target = self.blocks[packet.id]
  if target == nil then return target end
  self.queue_count = self.queue_count + 1
  packet.link = nil
  packet.id = self.current_id
  return target:enqueue(self.current, packet)
end

---------------------------------------------------------------- tasks
local IdleTask = {}
IdleTask.__index = IdleTask

function IdleTask:run(packet)
  local s = self.scheduler
  self.count = self.count - 1
  if self.count == 0 then return s:hold_current() end
  local v = self.seed
  if v % 2 == 0 then
    self.seed = v / 2
    return s:release(ID_DEVICE_A)
  end
  self.seed = xor16((v - 1) / 2, 0xD008)
  return s:release(ID_DEVICE_B)
end

local DeviceTask = {}
DeviceTask.__index = DeviceTask

function DeviceTask:run(packet)
  local s = self.scheduler
  if packet == nil then
    local p = self.pending
    if p == nil then return s:suspend_current() end
    self.pending = nil
    return s:send(p)
  end
  self.pending = packet
  return s:hold_current()
end

local WorkerTask = {}
WorkerTask.__index = WorkerTask

function WorkerTask:run(packet)
  local s = self.scheduler
  if packet == nil then return s:suspend_current() end
  if self.dest == ID_HANDLER_A then
    self.dest = ID_HANDLER_B
  else
    self.dest = ID_HANDLER_A
  end
  packet.id = self.dest
  packet.a1 = 0
  local data = packet.a2
  local c = self.char
  for i = 1, DATA_SIZE do
    c = c + 1
    if c > 26 then c = 1 end
    data[i] = c
  end
  self.char = c
  return s:send(packet)
end

local HandlerTask = {}
HandlerTask.__index = HandlerTask

function HandlerTask:run(packet)
  local s = self.scheduler
  if packet ~= nil then
    if packet.kind == KIND_WORK then
      self.work = packet:append_to(self.work)
    else
      self.devices = packet:append_to(self.devices)
    end
  end
  local work = self.work
  if work ~= nil then
    local i = work.a1
    if i < DATA_SIZE then
      local dev = self.devices
      if dev ~= nil then
        self.devices = dev.link
        dev.a1 = work.a2[i + 1]
        work.a1 = i + 1
        return s:send(dev)
      end
    else
      self.work = work.link
      return s:send(work)
    end
  end
  return s:suspend_current()
end

---------------------------------------------------------------- driver
local function run(count)
  local s = newscheduler()

  s:add_task(ID_IDLE, 0, nil,
    setmetatable({ scheduler = s, seed = 1, count = count }, IdleTask))
  s.current:set_running()

  local q = newpacket(nil, ID_WORKER, KIND_WORK)
  q = newpacket(q, ID_WORKER, KIND_WORK)
  s:add_task(ID_WORKER, 1000, q,
    setmetatable({ scheduler = s, dest = ID_HANDLER_A, char = 0 }, WorkerTask))

  q = newpacket(nil, ID_DEVICE_A, KIND_DEVICE)
  q = newpacket(q, ID_DEVICE_A, KIND_DEVICE)
  q = newpacket(q, ID_DEVICE_A, KIND_DEVICE)
  s:add_task(ID_HANDLER_A, 2000, q, setmetatable({ scheduler = s }, HandlerTask))

  q = newpacket(nil, ID_DEVICE_B, KIND_DEVICE)
  q = newpacket(q, ID_DEVICE_B, KIND_DEVICE)
  q = newpacket(q, ID_DEVICE_B, KIND_DEVICE)
  s:add_task(ID_HANDLER_B, 3000, q, setmetatable({ scheduler = s }, HandlerTask))

  s:add_task(ID_DEVICE_A, 4000, nil, setmetatable({ scheduler = s }, DeviceTask))
  s:add_task(ID_DEVICE_B, 5000, nil, setmetatable({ scheduler = s }, DeviceTask))

  s:schedule()
  return string.format("queue=%d hold=%d", s.queue_count, s.hold_count)
end

return { run = run }
