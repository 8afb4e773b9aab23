"""A structural check of SPIR-V modules, run before any OpenCL driver sees one.

Intel's OpenCL CPU runtime trusts the SPIR-V it is handed: an instruction
whose word count is 0 makes ``clBuildProgram`` loop forever, one whose word
count runs past the module's end makes the driver call ``exit()``, a
truncated module or an instruction with too few operands crashes its
SPIR-V reader. Every module pysycl hands to ``clCreateProgramWithIL`` (Python
kernels, kernel bundles, ``source_language.spirv``, the disk cache) passes
:func:`check` first, which raises ``sycl.exception(errc.build)`` saying what
is wrong and at which word.

The check is structural, after the SPIR-V specification, section 2.3
"Physical Layout" and 2.4 "Logical Layout": the header (magic number, version
1.0-1.6, id bound, schema 0); every instruction's word count at least 1 and
within the module; every opcode known, with a word count its operands allow;
literal strings terminated inside their instruction; result ids below the
bound and defined once; at least one ``OpCapability`` before anything else;
one ``OpMemoryModel``; ``OpFunction``/``OpFunctionEnd`` paired; every
``OpEntryPoint`` naming a function of the module, and at least one unless the
module is a library (``Linkage`` capability). It is no semantic validator
(``spirv-val``, :mod:`pysycl_numba.targets.spirv.spirv_check` wraps a part of it for the
compiler): a module that passes can still fail to build, with the driver's
log, and the driver is not hardened against every well-framed lie.

This module imports nothing beyond the standard library and pysycl's
exceptions, so the disk cache can use it without OpenCL.
"""

from __future__ import annotations

import struct

from pysycl._core.exceptions import errc, exception

MAGIC = 0x07230203
_HEADER_WORDS = 5
_MAX_BOUND = 0x400000  # "Result <id> bound" universal limit: ids up to 4,194,303 (spec 2.17)
_OP_NAMES = {5: "OpName", 10: "OpExtension", 11: "OpExtInstImport", 14: "OpMemoryModel",
             15: "OpEntryPoint", 17: "OpCapability", 54: "OpFunction", 55: "OpFunctionParameter",
             56: "OpFunctionEnd", 248: "OpLabel", 253: "OpReturn"}
_CAP_LINKAGE = 5
# Instructions whose last operand is their literal string: the string sizes them exactly.
# OpSourceExtension, OpName, OpMemberName, OpString, OpExtension, OpExtInstImport,
# OpModuleProcessed.
_STRING_LAST = frozenset((4, 5, 6, 7, 10, 11, 330))
# Block terminators: OpBranch, OpBranchConditional, OpSwitch, OpKill, OpReturn,
# OpReturnValue, OpUnreachable, OpTerminateInvocation and the ray-tracing/mesh ones.
_TERMINATORS = frozenset((249, 250, 251, 252, 253, 254, 255, 4416, 4448, 4449, 5294, 5335, 5336))

# Every opcode of the SPIR-V grammar (SPIRV-Headers ``unified1/spirv.core.grammar.json``,
# SPIR-V 1.6 revision 4, core and extension opcodes) as
# ``opcode:min_words:max_words:result_index:id_mask[:string_index][r]``: the fewest and
# most words its operands allow (max 0: unbounded), the word index of its result id (0:
# none), a hex bit mask of the word indexes that hold ids (the operands before the first
# one of variable size), the word index of a literal string operand whose position is
# fixed (absent: none), and ``r`` when every word after those operands (after the string,
# if any) is an id (``OpFunctionCall`` arguments, ``OpPhi`` pairs, ``OpEntryPoint``
# interfaces, ...).
_TABLE = """
    0:1:1:0:0 1:3:3:2:2 2:2:0:0:0:1 3:3:0:0:0 4:2:0:0:0:1 5:3:0:0:2:2 6:4:0:0:2:3 7:3:0:1:0:2 8:4:4:0:2
    10:2:0:0:0:1 11:3:0:1:0:2 12:5:0:2:ar 14:3:3:0:0 15:4:0:0:4:3r 16:3:0:0:2 17:2:2:0:0 19:2:2:1:0
    20:2:2:1:0 21:4:4:1:0 22:3:4:1:0 23:4:4:1:4 24:4:4:1:4 25:9:10:1:4 26:2:2:1:0 27:3:3:1:4 28:4:4:1:c
    29:3:3:1:4 30:2:0:1:0r 31:3:0:1:0:2 32:4:4:1:8 33:3:0:1:4r 34:2:2:1:0 35:2:2:1:0 36:2:2:1:0
    37:2:2:1:0 38:3:3:1:0 39:3:3:0:2 41:3:3:2:2 42:3:3:2:2 43:4:0:2:2 44:3:0:2:2r 45:6:6:2:2 46:3:3:2:2
    48:3:3:2:2 49:3:3:2:2 50:4:0:2:2 51:3:0:2:2r 52:4:0:2:2r 54:5:5:2:12 55:3:3:2:2 56:1:1:0:0
    57:4:0:2:ar 59:4:5:2:2r 60:6:6:2:3a 61:4:0:2:a 62:3:0:0:6 63:3:0:0:6 64:4:0:0:e 65:4:0:2:ar
    66:4:0:2:ar 67:5:0:2:1ar 68:5:5:2:a 69:4:4:2:a 70:5:0:2:1ar 71:3:0:0:2 72:4:0:0:2 73:2:2:1:0
    74:2:0:0:2r 75:2:0:0:2 77:5:5:2:1a 78:6:6:2:3a 79:5:0:2:1a 80:3:0:2:2r 81:4:0:2:a 82:5:0:2:1a
    83:4:4:2:a 84:4:4:2:a 86:5:5:2:1a 87:5:0:2:1a 88:6:0:2:1a 89:6:0:2:3a 90:7:0:2:3a 91:5:0:2:1a
    92:6:0:2:1a 93:6:0:2:3a 94:7:0:2:3a 95:5:0:2:1a 96:6:0:2:3a 97:6:0:2:3a 98:5:0:2:1a 99:4:0:0:e
    100:4:4:2:a 101:4:4:2:a 102:4:4:2:a 103:5:5:2:1a 104:4:4:2:a 105:5:5:2:1a 106:4:4:2:a 107:4:4:2:a
    109:4:4:2:a 110:4:4:2:a 111:4:4:2:a 112:4:4:2:a 113:4:4:2:a 114:4:4:2:a 115:4:4:2:a 116:4:4:2:a
    117:4:4:2:a 118:4:4:2:a 119:4:4:2:a 120:4:4:2:a 121:4:4:2:a 122:4:4:2:a 123:5:5:2:a 124:4:4:2:a
    126:4:4:2:a 127:4:4:2:a 128:5:5:2:1a 129:5:5:2:1a 130:5:5:2:1a 131:5:5:2:1a 132:5:5:2:1a
    133:5:5:2:1a 134:5:5:2:1a 135:5:5:2:1a 136:5:5:2:1a 137:5:5:2:1a 138:5:5:2:1a 139:5:5:2:1a
    140:5:5:2:1a 141:5:5:2:1a 142:5:5:2:1a 143:5:5:2:1a 144:5:5:2:1a 145:5:5:2:1a 146:5:5:2:1a
    147:5:5:2:1a 148:5:5:2:1a 149:5:5:2:1a 150:5:5:2:1a 151:5:5:2:1a 152:5:5:2:1a 154:4:4:2:a
    155:4:4:2:a 156:4:4:2:a 157:4:4:2:a 158:4:4:2:a 159:4:4:2:a 160:4:4:2:a 161:5:5:2:1a 162:5:5:2:1a
    163:5:5:2:1a 164:5:5:2:1a 165:5:5:2:1a 166:5:5:2:1a 167:5:5:2:1a 168:4:4:2:a 169:6:6:2:3a
    170:5:5:2:1a 171:5:5:2:1a 172:5:5:2:1a 173:5:5:2:1a 174:5:5:2:1a 175:5:5:2:1a 176:5:5:2:1a
    177:5:5:2:1a 178:5:5:2:1a 179:5:5:2:1a 180:5:5:2:1a 181:5:5:2:1a 182:5:5:2:1a 183:5:5:2:1a
    184:5:5:2:1a 185:5:5:2:1a 186:5:5:2:1a 187:5:5:2:1a 188:5:5:2:1a 189:5:5:2:1a 190:5:5:2:1a
    191:5:5:2:1a 194:5:5:2:1a 195:5:5:2:1a 196:5:5:2:1a 197:5:5:2:1a 198:5:5:2:1a 199:5:5:2:1a
    200:4:4:2:a 201:7:7:2:7a 202:6:6:2:3a 203:6:6:2:3a 204:4:4:2:a 205:4:4:2:a 207:4:4:2:a 208:4:4:2:a
    209:4:4:2:a 210:4:4:2:a 211:4:4:2:a 212:4:4:2:a 213:4:4:2:a 214:4:4:2:a 215:4:4:2:a 218:1:1:0:0
    219:1:1:0:0 220:2:2:0:2 221:2:2:0:2 224:4:4:0:e 225:3:3:0:6 227:6:6:2:3a 228:5:5:0:1e 229:7:7:2:7a
    230:9:9:2:1fa 231:9:9:2:1fa 232:6:6:2:3a 233:6:6:2:3a 234:7:7:2:7a 235:7:7:2:7a 236:7:7:2:7a
    237:7:7:2:7a 238:7:7:2:7a 239:7:7:2:7a 240:7:7:2:7a 241:7:7:2:7a 242:7:7:2:7a 245:3:0:2:2r
    246:4:0:0:6 247:3:3:0:2 248:2:2:1:0 249:2:2:0:2 250:4:0:0:e 251:3:0:0:6 252:1:1:0:0 253:1:1:0:0
    254:2:2:0:2 255:1:1:0:0 256:3:3:0:2 257:3:3:0:2 259:9:9:2:1fa 260:4:4:0:e 261:5:5:2:1a 262:5:5:2:1a
    263:6:6:2:3a 264:6:6:2:2a 265:6:6:2:2a 266:6:6:2:2a 267:6:6:2:2a 268:6:6:2:2a 269:6:6:2:2a
    270:6:6:2:2a 271:6:6:2:2a 274:7:7:2:7a 275:7:7:2:7a 276:9:9:2:1fa 277:9:9:2:1fa 278:7:7:2:7a
    279:7:7:2:7a 280:5:5:0:1e 281:5:5:0:1e 282:4:4:2:a 283:6:6:2:3a 284:6:6:2:3a 285:8:8:2:fa
    286:8:8:2:fa 287:6:6:0:3e 288:6:6:0:3e 291:7:7:2:7a 292:13:0:2:1ffar 293:8:8:2:fa 294:8:8:2:fa
    295:7:7:2:7a 296:7:7:2:7a 297:2:2:0:2 298:2:2:0:2 299:3:3:2:2 300:4:4:2:a 301:3:3:0:6 302:4:4:0:e
    303:3:3:2:2 304:6:6:2:3a 305:5:0:2:1a 306:6:0:2:1a 307:6:0:2:3a 308:7:0:2:3a 309:5:0:2:1a
    310:6:0:2:1a 311:6:0:2:3a 312:7:0:2:3a 313:5:0:2:1a 314:6:0:2:3a 315:6:0:2:3a 316:4:4:2:a
    317:1:1:0:0 318:6:6:2:3a 319:4:4:0:e 320:5:0:2:1a 321:4:4:2:a 322:2:2:1:0 323:6:6:2:2 324:4:4:2:a
    325:8:8:2:fa 326:7:7:2:7a 327:2:2:1:0 328:4:4:2:a 329:4:4:0:e 330:2:0:0:0:1 331:3:0:0:2 332:3:0:0:2
    333:4:4:2:a 334:5:5:2:1a 335:5:5:2:1a 336:5:5:2:1a 337:6:6:2:3a 338:5:5:2:1a 339:5:5:2:1a
    340:5:5:2:1a 341:6:6:2:3a 342:6:6:2:2a 343:5:5:2:1a 344:5:5:2:1a 345:6:6:2:3a 346:6:6:2:3a
    347:6:6:2:3a 348:6:6:2:3a 349:6:7:2:2ar 350:6:7:2:2ar 351:6:7:2:2ar 352:6:7:2:2ar 353:6:7:2:2ar
    354:6:7:2:2ar 355:6:7:2:2ar 356:6:7:2:2ar 357:6:7:2:2ar 358:6:7:2:2ar 359:6:7:2:2ar 360:6:7:2:2ar
    361:6:7:2:2ar 362:6:7:2:2ar 363:6:7:2:2ar 364:6:7:2:2ar 365:6:6:2:3a 366:6:6:2:3a 400:4:4:2:a
    401:5:5:2:1a 402:5:5:2:1a 403:5:5:2:1a 4160:4:5:2:ar 4161:3:4:2:2r 4162:3:4:2:2r 4163:3:5:1:4r
    4164:5:0:2:1a 4165:4:0:0:e 4166:5:5:2:1a 4181:4:4:2:2 4182:3:0:0:2:2r 4183:3:3:2:2 4184:4:0:2:ar
    4185:3:0:0:6r 4186:1:1:0:0 4190:3:0:1:0r 4416:1:1:0:0 4417:3:3:1:0 4418:4:6:2:2r 4419:5:0:2:1ar
    4420:5:0:2:1ar 4421:4:4:2:a 4422:4:4:2:a 4423:6:0:2:3ar 4424:6:0:2:3ar 4425:6:6:2:1a 4426:3:6:0:6r
    4427:6:6:2:3a 4428:4:4:2:a 4429:4:4:2:a 4430:4:4:2:a 4431:6:7:2:3ar 4432:5:5:2:1a 4433:5:0:2:ar
    4434:10:0:2:3fa 4445:12:12:0:ffe 4446:3:3:0:6 4447:4:4:2:a 4448:1:1:0:0 4449:1:1:0:0 4450:5:6:2:1a
    4451:5:6:2:1a 4452:5:6:2:1a 4453:6:7:2:3a 4454:6:7:2:3a 4455:6:7:2:3a 4456:7:7:1:7c 4457:5:0:2:1a
    4458:4:0:0:e 4459:6:7:2:3a 4460:4:4:2:a 4461:4:4:2:a 4462:4:4:2:a 4463:4:4:2:a 4472:2:2:1:0
    4473:9:9:0:1fe 4474:2:2:0:2 4475:3:3:0:6 4476:2:2:0:2 4477:4:4:2:a 4479:5:5:2:1a 4480:6:6:2:3a
    4481:6:6:2:3a 4482:8:8:2:fa 4483:8:8:2:fa 4497:4:4:2:a 4500:8:8:2:fa 4501:8:8:2:fa 4502:8:8:2:fa
    4503:8:8:2:fa 4540:4:4:2:a 4541:4:4:2:a 4542:5:5:2:1a 5000:6:6:2:2a 5001:6:6:2:2a 5002:6:6:2:2a
    5003:6:6:2:2a 5004:6:6:2:2a 5005:6:6:2:2a 5006:6:6:2:2a 5007:6:6:2:2a 5011:5:5:2:1a 5012:6:6:2:3a
    5056:4:4:2:a 5074:6:6:2:3a 5075:2:2:0:2 5076:3:3:1:4 5078:4:4:2:a 5090:4:4:2:a 5101:5:5:2:1a
    5103:3:0:1:0:2 5104:3:0:1:0:2 5110:4:4:2:a 5111:4:4:2:a 5249:15:15:0:7ffe 5250:14:14:0:3ffe
    5251:8:8:0:fe 5252:4:4:2:a 5253:4:4:2:a 5254:4:4:2:a 5255:4:4:2:a 5256:14:14:0:3ffe 5257:4:4:2:a
    5258:4:4:2:a 5259:2:2:0:2 5260:13:13:0:1ffe 5261:14:14:0:3ffe 5262:13:13:0:1ffe 5263:7:7:0:7e
    5264:3:3:0:6 5265:4:4:2:a 5266:3:3:0:6 5267:4:4:2:a 5268:4:4:2:a 5269:4:4:2:a 5270:4:4:2:a
    5271:4:4:2:a 5272:4:4:2:a 5273:4:4:2:a 5274:4:4:2:a 5275:4:4:2:a 5276:4:4:2:a 5277:4:4:2:a
    5278:4:4:2:a 5279:2:4:0:2r 5280:3:3:0:6 5281:2:2:1:0 5283:7:0:2:7a 5288:4:4:1:c 5289:12:14:2:ffa
    5290:7:8:0:7er 5291:4:4:0:e 5292:15:17:2:7ffa 5293:4:4:2:a 5294:4:5:0:er 5295:3:3:0:6 5296:4:4:2:a
    5299:3:3:0:6 5300:8:8:2:fa 5301:8:8:2:fa 5302:5:0:2:1a 5303:4:0:0:e 5304:5:5:0:1e 5305:8:8:0:fe
    5306:9:9:0:1fe 5307:4:4:2:a 5308:4:4:2:a 5309:3:3:0:6 5310:3:5:0:6r 5311:13:15:0:1ffer
    5312:14:16:0:3ffer 5313:2:2:1:0 5314:3:3:0:6 5315:2:4:0:2r 5316:13:13:0:1ffe 5317:14:14:0:3ffe
    5318:2:2:0:2 5319:3:3:0:6 5320:4:4:2:a 5321:3:3:0:6 5322:4:4:2:a 5323:4:4:2:a 5324:4:4:2:a
    5325:4:4:2:a 5326:4:4:2:a 5327:4:4:2:a 5328:4:4:2:a 5329:4:4:2:a 5330:4:4:2:a 5331:4:4:2:a
    5332:4:4:2:a 5333:4:4:2:a 5334:5:5:2:1a 5335:1:1:0:0 5336:1:1:0:0 5337:12:12:0:ffe
    5338:13:13:0:1ffe 5339:13:13:0:1ffe 5340:5:5:2:1a 5341:2:2:1:0 5344:3:3:0:6 5345:5:5:2:1a
    5346:4:4:2:a 5347:4:4:2:a 5348:4:4:2:a 5349:4:4:2:a 5350:4:4:2:a 5351:4:4:2:a 5352:4:4:2:a
    5358:6:6:1:3c 5359:6:0:2:3a 5360:5:0:0:1e 5361:6:6:2:3a 5362:4:4:2:a 5364:1:1:0:0 5365:1:1:0:0
    5366:6:6:2:2a 5367:8:0:2:3a 5368:6:0:0:e 5369:5:0:2:1ar 5370:4:4:1:c 5371:4:0:1:cr 5372:3:3:2:2
    5373:4:0:2:ar 5374:4:0:2:ar 5375:4:0:2:ar 5376:5:5:2:1a 5377:3:3:2:2 5378:4:0:2:ar 5379:4:0:2:ar
    5380:1:1:0:0 5381:3:3:2:2 5382:8:8:2:fa 5384:4:0:2:ar 5390:4:4:2:a 5391:4:4:2:a 5392:4:4:2:a
    5393:4:4:2:a 5394:4:4:2:a 5395:4:4:2:a 5396:4:4:2:a 5397:2:2:0:0 5398:7:8:2:7a 5427:5:5:2:1a
    5428:5:5:2:1a 5429:5:5:2:1a 5430:5:5:2:1a 5431:5:5:2:1a 5432:4:4:2:a 5433:4:4:2:a 5434:4:4:2:a
    5435:4:4:2:a 5436:4:4:2:a 5437:4:4:2:a 5438:5:5:2:1a 5439:5:5:2:1a 5571:5:5:2:1a 5572:6:6:2:3a
    5573:6:6:2:3a 5574:5:5:2:1a 5575:4:4:2:a 5576:3:3:0:6 5577:5:5:2:1a 5578:4:4:0:e 5580:7:7:2:7a
    5581:6:6:0:3e 5585:4:4:2:a 5586:4:4:2:a 5587:5:5:2:1a 5588:5:5:2:1a 5589:5:5:2:1a 5590:5:5:2:1a
    5591:5:5:2:1a 5592:5:5:2:1a 5593:5:5:2:1a 5594:5:5:2:1a 5595:5:5:2:1a 5596:5:5:2:1a 5597:5:5:2:1a
    5598:5:5:2:1a 5600:4:4:2:a 5601:3:0:2:2r 5609:3:0:1:0:2 5610:7:0:2:1a:5 5611:4:0:2:ar 5614:7:7:2:7a
    5615:7:7:2:7a 5630:2:2:0:2 5631:5:5:2:1a 5632:3:0:0:2 5633:4:0:0:2 5699:5:5:2:1a 5700:3:3:1:4
    5701:2:2:1:0 5702:2:2:1:0 5703:2:2:1:0 5704:2:2:1:0 5705:2:2:1:0 5706:2:2:1:0 5707:2:2:1:0
    5708:2:2:1:0 5709:2:2:1:0 5710:2:2:1:0 5711:2:2:1:0 5712:2:2:1:0 5713:5:5:2:1a 5714:5:5:2:1a
    5715:5:5:2:1a 5716:5:5:2:1a 5717:5:5:2:1a 5718:5:5:2:1a 5719:5:5:2:1a 5720:5:5:2:1a 5721:3:3:2:2
    5722:3:3:2:2 5723:3:3:2:2 5724:7:7:2:7a 5725:5:5:2:1a 5726:3:3:2:2 5727:3:3:2:2 5728:4:4:2:a
    5729:5:5:2:1a 5730:5:5:2:1a 5731:6:6:2:3a 5732:4:4:2:a 5733:4:4:2:a 5734:4:4:2:a 5735:4:4:2:a
    5736:4:4:2:a 5737:4:4:2:a 5738:4:4:2:a 5739:4:4:2:a 5740:4:4:2:a 5741:4:4:2:a 5742:4:4:2:a
    5743:4:4:2:a 5744:4:4:2:a 5745:4:4:2:a 5746:6:6:2:3a 5747:6:6:2:3a 5748:6:6:2:3a 5749:7:7:2:7a
    5750:5:5:2:1a 5751:7:7:2:7a 5752:4:4:2:a 5753:5:5:2:1a 5754:4:4:2:a 5755:5:5:2:1a 5756:5:5:2:1a
    5757:6:6:2:3a 5758:7:7:2:7a 5759:7:7:2:7a 5760:8:8:2:fa 5761:6:6:2:3a 5762:7:7:2:7a 5763:7:7:2:7a
    5764:8:8:2:fa 5765:4:4:2:a 5766:4:4:2:a 5767:4:4:2:a 5768:4:4:2:a 5769:4:4:2:a 5770:5:5:2:1a
    5771:5:5:2:1a 5772:5:5:2:1a 5773:6:6:2:3a 5774:6:6:2:3a 5775:6:6:2:3a 5776:5:5:2:1a 5777:4:4:2:a
    5778:4:4:2:a 5779:4:4:2:a 5780:4:4:2:a 5781:10:10:2:3fa 5782:11:11:2:7fa 5783:4:4:2:a 5784:4:4:2:a
    5785:4:4:2:a 5786:6:6:2:3a 5787:7:7:2:7a 5788:6:6:2:3a 5789:7:7:2:7a 5790:4:4:2:a 5791:4:4:2:a
    5792:9:9:2:1fa 5793:11:11:2:7fa 5794:14:14:2:3ffa 5795:5:5:2:1a 5796:4:4:2:a 5797:5:5:2:1a
    5798:7:7:2:7a 5799:5:5:2:1a 5800:4:4:2:a 5801:5:5:2:1a 5802:5:5:2:1a 5803:5:5:2:1a 5804:6:6:2:3a
    5805:7:7:2:7a 5806:6:6:2:3a 5807:7:7:2:7a 5808:4:4:2:a 5809:4:4:2:a 5810:4:4:2:a 5811:4:4:2:a
    5812:4:4:2:a 5813:4:4:2:a 5814:4:4:2:a 5815:4:4:2:a 5816:4:4:2:a 5818:4:4:2:a 5819:3:3:2:2
    5820:2:2:0:2 5840:9:9:2:a 5841:9:9:2:a 5842:9:9:2:a 5843:9:9:2:a 5846:11:11:2:2a 5847:11:11:2:2a
    5848:11:11:2:2a 5849:11:11:2:2a 5850:7:7:2:2a 5851:7:7:2:2a 5852:7:7:2:2a 5853:7:7:2:2a
    5854:7:7:2:2a 5855:9:9:2:a 5856:9:9:2:a 5857:9:9:2:a 5858:11:11:2:2a 5859:9:9:2:a 5860:9:9:2:a
    5861:9:9:2:a 5862:9:9:2:a 5863:9:9:2:a 5864:9:9:2:a 5865:9:9:2:a 5866:9:9:2:a 5867:9:9:2:a
    5868:9:9:2:a 5869:9:9:2:a 5870:9:9:2:a 5871:9:9:2:a 5872:9:9:2:a 5873:9:9:2:a 5874:9:9:2:a
    5875:9:9:2:a 5876:9:9:2:a 5877:9:9:2:a 5878:9:9:2:a 5879:11:11:2:2a 5880:11:11:2:2a 5881:11:11:2:2a
    5882:11:11:2:2a 5887:1:0:0:0 5911:2:3:1:0r 5912:3:4:1:4r 5913:2:0:1:0r 5923:9:9:2:a 5924:9:9:2:a
    5925:9:9:2:a 5926:9:9:2:a 5927:9:9:2:a 5928:9:9:2:a 5929:9:9:2:a 5930:9:9:2:a 5931:9:9:2:a
    5932:9:9:2:a 5933:9:9:2:a 5934:4:4:2:a 5938:4:4:2:a 5946:5:5:2:1a 5947:5:5:2:1a 5949:4:4:2:a
    6016:4:4:2:a 6017:4:4:2:a 6018:5:5:2:1a 6019:5:5:2:1a 6020:5:5:2:1a 6021:5:5:2:1a 6022:5:5:2:1a
    6023:5:5:2:1a 6024:5:5:2:1a 6025:5:5:2:1a 6026:4:4:2:a 6027:5:5:2:1a 6028:5:5:2:1a 6029:4:4:2:a
    6030:4:4:2:a 6031:5:5:2:1a 6032:5:5:2:1a 6035:7:7:2:7a 6086:3:3:1:0 6090:1:0:0:0r 6091:1:0:0:0r
    6092:1:0:0:0r 6096:3:0:2:2r 6116:4:4:2:a 6117:4:4:2:a 6142:4:4:0:e 6143:4:4:0:e 6145:4:4:2:a
    6163:8:8:2:a 6164:2:0:0:2r 6165:4:4:2:a 6166:2:2:0:2 6199:2:2:1:0 6221:3:0:0:6 6231:11:11:0:7fe
    6232:11:11:0:7fe 6233:11:11:0:7fe 6234:10:10:0:3fe 6235:11:11:0:7fe 6237:7:8:2:7a 6242:7:7:2:7a
    6244:5:5:2:1a 6248:3:0:0:2:2 6249:5:0:0:a:4r 6250:3:3:0:2 6251:4:0:2:2 6252:7:7:2:2 6253:3:0:2:2
    6254:3:0:2:2r 6401:6:6:2:2a 6402:6:6:2:2a 6403:6:6:2:2a 6404:6:6:2:2a 6405:6:6:2:2a 6406:6:6:2:2a
    6407:6:6:2:2a 6408:6:6:2:2a 6426:4:4:2:a 6428:7:7:2:6a 6429:5:5:0:16 6529:4:4:2:a 6530:4:4:2:a
    6531:4:4:2:a
"""


_Spec = tuple[int, int, int, tuple[int, ...], int, bool]


def _parse_table() -> dict[int, _Spec]:
    out: dict[int, _Spec] = {}
    for tok in _TABLE.split():
        tail = tok.endswith("r")
        f = tok.rstrip("r").split(":")
        mask = int(f[4], 16)
        ids = tuple(i for i in range(mask.bit_length()) if mask >> i & 1)
        out[int(f[0])] = (int(f[1]), int(f[2]), int(f[3]), ids, int(f[5]) if len(f) > 5 else 0,
                          tail)
    return out


_OPCODES = _parse_table()


class _MalformedError(Exception):
    def __init__(self, word: int, what: str) -> None:
        super().__init__(word, what)
        self.word, self.what = word, what


def _words(il: bytes) -> tuple[int, ...]:
    if len(il) < 4 * _HEADER_WORDS:
        raise _MalformedError(0, f"{len(il)} bytes is shorter than the 5-word SPIR-V header")
    if len(il) % 4:
        raise _MalformedError(len(il) // 4, f"its length ({len(il)} bytes) is not a whole number "
                         "of 32-bit words")
    (magic,) = struct.unpack_from("<I", il)
    if magic == MAGIC:
        return struct.unpack(f"<{len(il) // 4}I", il)
    if magic == 0x03022307:
        # Big-endian modules are valid SPIR-V, but no OpenCL driver pysycl
        # knows reads them; the compiler never emits one.
        raise _MalformedError(0, "it is big-endian; OpenCL drivers take little-endian SPIR-V")
    raise _MalformedError(0, f"bad magic number 0x{magic:08x} (SPIR-V starts with 0x{MAGIC:08x})")


def _header(w: tuple[int, ...]) -> int:
    version = w[1]
    major, minor = (version >> 16) & 0xFF, (version >> 8) & 0xFF
    if version & 0xFF0000FF or major != 1 or minor > 6:
        raise _MalformedError(1, f"unknown SPIR-V version word 0x{version:08x} (1.0 to 1.6 exist)")
    bound = w[3]
    if not 0 < bound <= _MAX_BOUND:
        raise _MalformedError(3, f"id bound {bound} is outside 1..{_MAX_BOUND}")
    if w[4] != 0:
        raise _MalformedError(4, f"schema word is {w[4]}, not 0")
    return bound


def _name(op: int) -> str:
    return _OP_NAMES.get(op, f"opcode {op}")


class _Walk:
    """One pass over the instructions, collecting what the module-level checks need."""

    def __init__(self, w: tuple[int, ...], bound: int) -> None:
        self.w, self.bound = w, bound
        self.defined: set[int] = set()
        self.uses: list[tuple[int, int]] = []          # (word, id) of every id operand read
        self.functions: set[int] = set()
        self.entry_points: list[tuple[int, int]] = []  # (word, function id)
        self.capabilities: set[int] = set()
        self.widths: dict[int, int] = {}               # OpTypeInt/OpTypeFloat id -> bits
        self.memory_models = 0
        self.open_function = 0
        self.in_block = False
        self.labels = 0
        self.seen_other = False                        # an instruction other than OpCapability

    def run(self) -> None:
        w, pos = self.w, _HEADER_WORDS
        while pos < len(w):
            count, op = w[pos] >> 16, w[pos] & 0xFFFF
            if count == 0:
                raise _MalformedError(pos, f"instruction ({_name(op)}) has word count 0")
            if pos + count > len(w):
                raise _MalformedError(pos, f"instruction ({_name(op)}) has word count {count}, "
                                 f"running {pos + count - len(w)} word(s) past the module's "
                                 f"end ({len(w)} words)")
            self.instruction(pos, count, op)
            pos += count
        self.finish(pos)

    def instruction(self, pos: int, count: int, op: int) -> None:
        w = self.w
        spec = _OPCODES.get(op)
        if spec is None:
            raise _MalformedError(pos, f"unknown opcode {op}")
        lo, hi, res, ids, sidx, tail = spec
        if count < lo or (hi and count > hi):
            want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi else f"at least {lo}"
            raise _MalformedError(pos, f"{_name(op)} has word count {count}; its operands need {want}")
        rest = lo
        if sidx:
            end = _string_end(w, pos + sidx, pos + count)
            if end is None:
                raise _MalformedError(pos, f"{_name(op)}'s literal string is not NUL-terminated "
                                 "inside the instruction")
            if op in _STRING_LAST and end != pos + count:
                raise _MalformedError(pos, f"{_name(op)} has word count {count}, but its operands "
                                 f"end after word {end - pos}")
            rest = end - pos
        for i in ids:
            if i < count:
                self.uses.append((pos + i, w[pos + i]))
        if tail:
            self.uses.extend((pos + i, w[pos + i]) for i in range(rest, count))
        if res:
            rid = w[pos + res]
            if not 0 < rid < self.bound:
                raise _MalformedError(pos + res, f"result id {rid} of {_name(op)} is outside the id "
                                 f"bound 1..{self.bound - 1}")
            if rid in self.defined:
                raise _MalformedError(pos + res, f"result id {rid} of {_name(op)} is defined twice")
            self.defined.add(rid)
        self.layout(pos, count, op)

    def layout(self, pos: int, count: int, op: int) -> None:
        w = self.w
        if op == 17:  # OpCapability
            if self.seen_other:
                raise _MalformedError(pos, "OpCapability after other instructions (capabilities "
                                 "come first)")
            self.capabilities.add(w[pos + 1])
            return
        if not self.capabilities:
            raise _MalformedError(pos, f"the module starts with {_name(op)}, not OpCapability")
        self.seen_other = True
        if op in (21, 22):  # OpTypeInt, OpTypeFloat: the width sizes their constants
            self.widths[w[pos + 1]] = w[pos + 2]
        elif op in (43, 50):  # OpConstant, OpSpecConstant: literal words = ceil(width / 32)
            bits = self.widths.get(w[pos + 1])
            if bits is None:
                raise _MalformedError(pos + 1, f"{_name(op)}'s type {w[pos + 1]} is no scalar "
                                 "numeric type defined before it")
            if count != 3 + max(1, (bits + 31) // 32):
                raise _MalformedError(pos, f"{_name(op)} of a {bits}-bit type has word count "
                                 f"{count}, not {3 + max(1, (bits + 31) // 32)}")
        elif op == 14:  # OpMemoryModel
            self.memory_models += 1
            if self.memory_models > 1:
                raise _MalformedError(pos, "a second OpMemoryModel")
        elif op == 15:  # OpEntryPoint
            if not self.memory_models:
                raise _MalformedError(pos, "OpEntryPoint before OpMemoryModel")
            self.entry_points.append((pos, w[pos + 2]))
        elif op == 54:  # OpFunction
            if not self.memory_models:
                raise _MalformedError(pos, "OpFunction before OpMemoryModel")
            if self.open_function:
                raise _MalformedError(pos, f"OpFunction inside function {self.open_function} (no "
                                 "OpFunctionEnd before it)")
            self.open_function = w[pos + 2]
            self.functions.add(self.open_function)
            self.labels = 0
        elif self.open_function:
            self.function_body(pos, op)
        elif op in (55, 56, 248) or op in _TERMINATORS:
            raise _MalformedError(pos, f"{_name(op)} outside a function")

    def function_body(self, pos: int, op: int) -> None:
        """Blocks: each starts with OpLabel and ends with a terminator (spec 2.2.5, 2.4)."""
        if op == 248:  # OpLabel
            if self.in_block:
                raise _MalformedError(pos, "OpLabel inside a block (the block before it has no "
                                 "terminator)")
            self.in_block = True
            self.labels += 1
        elif op == 56:  # OpFunctionEnd
            if self.in_block:
                raise _MalformedError(pos, "OpFunctionEnd inside a block (the last block has no "
                                 "terminator)")
            self.open_function = 0
        elif op in _TERMINATORS:
            if not self.in_block:
                raise _MalformedError(pos, f"block terminator {_name(op)} outside a block")
            self.in_block = False
        elif op == 55:  # OpFunctionParameter
            if self.labels:
                raise _MalformedError(pos, "OpFunctionParameter after the function's first block")
        elif not self.in_block and op not in (8, 317):  # OpLine, OpNoLine may sit anywhere
            raise _MalformedError(pos, f"{_name(op)} inside a function but outside any block")

    def finish(self, end: int) -> None:
        if not self.capabilities:
            raise _MalformedError(end, "no OpCapability")
        if not self.memory_models:
            raise _MalformedError(end, "no OpMemoryModel")
        if self.open_function:
            raise _MalformedError(end, f"the module ends inside function {self.open_function} "
                             "(truncated? no OpFunctionEnd)")
        if not self.entry_points and _CAP_LINKAGE not in self.capabilities:
            raise _MalformedError(end, "no OpEntryPoint (a kernel module needs one; a library "
                             "module declares the Linkage capability)")
        for pos, fid in self.entry_points:
            if fid not in self.functions:
                raise _MalformedError(pos + 2, f"OpEntryPoint names id {fid}, which is no "
                                 "OpFunction of the module")
        for pos, i in self.uses:  # forward references are legal: checked after the pass
            if i not in self.defined:
                raise _MalformedError(pos, f"id {i} is used but never defined")


def _string_end(w: tuple[int, ...], start: int, end: int) -> int | None:
    """The word index after the literal string at ``start``; None if not terminated by ``end``."""
    for i in range(start, end):
        x = w[i]
        if not (x & 0xFF and x & 0xFF00 and x & 0xFF0000 and x & 0xFF000000):
            return i + 1
    return None


def problem(il: bytes) -> tuple[int, str] | None:
    """What is structurally wrong with SPIR-V module ``il``, and at which word; None if nothing."""
    try:
        w = _words(bytes(il))
        _Walk(w, _header(w)).run()
    except _MalformedError as m:
        return m.word, m.what
    return None


def check(il: bytes, what: str = "SPIR-V module") -> None:
    """Raise ``sycl.exception(errc.build)`` unless ``il`` is structurally valid SPIR-V.

    Args:
        il: the module's bytes.
        what: how to name the module in the message.

    Raises:
        exception: ``errc.build``, naming the problem and its word offset.
    """
    found = problem(il)
    if found is not None:
        word, msg = found
        raise exception(errc.build, f"{what} is malformed SPIR-V and was not handed to the "
                        f"OpenCL driver: {msg} (at word {word}, byte offset {4 * word})")
